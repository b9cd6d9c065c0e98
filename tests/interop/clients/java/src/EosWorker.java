// An exactly-once consume-transform-produce worker that runs until told to stop: it reads
// <prefix>-in, writes each value upper-cased to <prefix>-out in transactions that carry the
// consumer's offsets, and prints one JSON line per committed transaction. It is killed (SIGKILL)
// and replaced, and the broker under it killed, by tests/interop/test_java_transactions_v2.py.

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;

class EosWorker {
    /** Runs until ``stop`` exists; the last line says how it ended. */
    static Object run(String name, Path stop) throws Exception {
        String prefix = JavaScenarios.prefix;
        String in = prefix + "-in", out = prefix + "-out";
        KafkaProducer<String, String> producer = JavaScenarios.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-eos",
                ProducerConfig.CLIENT_ID_CONFIG, name + "-producer",
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10000,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60000,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 60000));
        KafkaConsumer<String, String> consumer = JavaScenarios.consumer(Map.of(
                ConsumerConfig.GROUP_ID_CONFIG, prefix + "-g", ConsumerConfig.CLIENT_ID_CONFIG, name,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000,
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500));
        producer.initTransactions();
        consumer.subscribe(List.of(in));
        int transactions = 0, aborted = 0;
        String ended = "stopped";
        while (!Files.exists(stop)) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
            if (records.isEmpty()) continue;
            try {
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(out, r.partition(), r.key(), r.value().toUpperCase()));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                producer.commitTransaction();
                transactions++;
                System.out.println(Json.json(Json.obj("committed", records.count(), "transactions", transactions)));
                System.out.flush();
            } catch (ProducerFencedException e) {
                ended = "fenced";
                break;
            } catch (KafkaException e) {
                // abortable (a broker gone, an epoch bumped by a timeout): abort, read again from
                // the committed offsets
                aborted++;
                System.out.println(Json.json(Json.obj("aborted", e.getClass().getName())));
                System.out.flush();
                if (!abort(producer)) {
                    ended = "fenced";
                    break;
                }
                rewind(consumer);
            }
        }
        try {
            producer.close(Duration.ofSeconds(10));
            consumer.close(Duration.ofSeconds(10));
        } catch (KafkaException e) {
            // closing after a fence
        }
        return Json.obj("ended", ended, "transactions", transactions, "aborted", aborted);
    }

    /** Abort, asked again while the broker is away; false once fenced. */
    static boolean abort(KafkaProducer<String, String> producer) {
        while (true) {
            try {
                producer.abortTransaction();
                return true;
            } catch (ProducerFencedException e) {
                return false;
            } catch (TimeoutException e) {
                // the broker is restarting: the abort may be retried
            }
        }
    }

    /** Back to the committed offsets, asked again while the broker is away. */
    static void rewind(KafkaConsumer<String, String> consumer) {
        Set<TopicPartition> assigned = consumer.assignment();
        while (true) {
            try {
                Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned, Duration.ofSeconds(30));
                for (TopicPartition tp : assigned) {
                    OffsetAndMetadata at = committed.get(tp);
                    if (at == null) consumer.seekToBeginning(List.of(tp));
                    else consumer.seek(tp, at.offset());
                }
                return;
            } catch (TimeoutException e) {
                // the broker is restarting
            }
        }
    }
}
