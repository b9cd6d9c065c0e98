// Scenario 5: an idempotent producer, a consume-transform-produce loop with
// sendOffsetsToTransaction, an aborted transaction, a zombie fenced, and read_committed readers.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;

import static java.util.Map.entry;

class Transactions {
    static final int PARTITIONS = 3;
    static final int PER_PARTITION = 10;

    static Object run() throws Exception {
        String prefix = JavaScenarios.prefix;
        String in = prefix + "-in", out = prefix + "-out", group = prefix + "-g";
        Map<String, Object> result = new LinkedHashMap<>();
        try (Admin admin = JavaScenarios.admin()) {
            JavaScenarios.createTopic(admin, in, PARTITIONS);
            JavaScenarios.createTopic(admin, out, PARTITIONS);

            // an idempotent producer fills the input: offsets 0..9 in each partition, no gaps
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try (KafkaProducer<String, String> p = JavaScenarios.producer(Map.of(
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                    ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5))) {
                for (int i = 0; i < PER_PARTITION; i++)
                    for (int part = 0; part < PARTITIONS; part++)
                        sent.add(p.send(new ProducerRecord<>(in, part, "k" + i, "in-" + part + "-" + i)));
                p.flush();
            }
            List<Object> offsets = new ArrayList<>();
            for (Future<RecordMetadata> f : sent) offsets.add(List.of(f.get().partition(), f.get().offset()));
            result.put("idempotent_offsets", offsets);

            // consume-transform-produce, offsets committed in the producer's transactions
            List<Object> loop = new ArrayList<>();
            KafkaProducer<String, String> zombie;
            try (KafkaConsumer<String, String> consumer = JavaScenarios.consumer(Map.of(
                         ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.CLIENT_ID_CONFIG, "ctp",
                         ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                         ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 7,
                         ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000,
                         ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 200))) {
                zombie = JavaScenarios.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-ctp",
                                                       ProducerConfig.CLIENT_ID_CONFIG, "ctp-producer"));
                zombie.initTransactions();
                consumer.subscribe(List.of(in));
                int done = 0;
                long deadline = System.currentTimeMillis() + 45000;
                while (done < PARTITIONS * PER_PARTITION) {
                    if (System.currentTimeMillis() > deadline) throw new IllegalStateException("the loop stalled at " + done);
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    if (records.isEmpty()) continue;
                    zombie.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        zombie.send(new ProducerRecord<>(out, r.partition(), r.key(), r.value().toUpperCase()));
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        done++;
                    }
                    zombie.sendOffsetsToTransaction(next, consumer.groupMetadata());
                    zombie.commitTransaction();
                    loop.add(records.count());
                }
                // an aborted transaction: neither its records nor its offsets count (its record is
                // written before the abort, else whether it reaches the log at all is a race)
                zombie.beginTransaction();
                zombie.send(new ProducerRecord<>(out, 0, "x", "ABORTED-1")).get();
                zombie.sendOffsetsToTransaction(Map.of(new TopicPartition(in, 0), new OffsetAndMetadata(1)),
                                                consumer.groupMetadata());
                zombie.abortTransaction();
                result.put("committed_in_loop", JavaScenarios.committed(admin, group));
            }
            result.put("loop_batches_total", loop.stream().mapToInt(x -> (Integer) x).sum());

            // the zombie: a transaction open when a new instance with its transactional id starts
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(out, 1, "z", "ZOMBIE-1")).get();
            KafkaProducer<String, String> successor = JavaScenarios.producer(Map.of(
                    ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-ctp", ProducerConfig.CLIENT_ID_CONFIG, "successor"));
            successor.initTransactions();
            result.put("zombie_send", JavaScenarios.attempt(() -> {
                zombie.send(new ProducerRecord<>(out, 2, "z", "ZOMBIE-2")).get();
                return "sent";
            }));
            result.put("zombie_commit", JavaScenarios.attempt(() -> {
                zombie.commitTransaction();
                return "committed";
            }));
            zombie.close(Duration.ofSeconds(5));
            successor.beginTransaction();
            successor.send(new ProducerRecord<>(out, 2, "s", "SUCCESSOR-1"));
            successor.commitTransaction();
            successor.close();

            // read_committed and read_uncommitted readers of the output, from the start to the end
            result.put("read_committed", read(out, "read_committed"));
            result.put("read_uncommitted", read(out, "read_uncommitted"));
            result.put("committed", JavaScenarios.committed(admin, group));
            result.put("end_offsets_out", JavaScenarios.endOffsets(out, PARTITIONS));
        }
        return result;
    }

    /** Every value a reader with this isolation level sees, sorted. */
    static List<String> read(String topic, String isolation) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = JavaScenarios.consumer(Map.of(
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation, ConsumerConfig.CLIENT_ID_CONFIG, "reader"))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) throw new IllegalStateException("reader stuck before " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) values.add(r.value());
            }
        }
        Collections.sort(values);
        return values;
    }
}
