// Transactions per second for bench/transactions.py: begin, 10 records over 3 partitions, the
// batch's input offsets for a group (sendOffsetsToTransaction), commit; for a number of seconds.

import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

class TxnBench {
    static final int PARTITIONS = 3, RECORDS = 10;

    static Object run(double seconds) throws Exception {
        String prefix = JavaScenarios.prefix, out = prefix + "-out", in = prefix + "-in";
        try (Admin admin = JavaScenarios.admin()) {
            JavaScenarios.createTopic(admin, out, PARTITIONS);
            JavaScenarios.createTopic(admin, in, PARTITIONS);
        }
        try (KafkaProducer<String, String> producer = JavaScenarios.producer(Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-bench", ProducerConfig.LINGER_MS_CONFIG, 0))) {
            producer.initTransactions();
            ConsumerGroupMetadata group = new ConsumerGroupMetadata(prefix + "-g");
            long start = System.nanoTime(), deadline = start + (long) (seconds * 1e9);
            int done = 0;
            long offset = 0;
            while (System.nanoTime() < deadline) {
                producer.beginTransaction();
                for (int i = 0; i < RECORDS; i++)
                    producer.send(new ProducerRecord<>(out, i % PARTITIONS, null, "v" + i));
                offset += RECORDS;
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (int p = 0; p < PARTITIONS; p++) offsets.put(new TopicPartition(in, p), new OffsetAndMetadata(offset));
                producer.sendOffsetsToTransaction(offsets, group);
                producer.commitTransaction();
                done++;
            }
            double took = (System.nanoTime() - start) / 1e9;
            return Json.obj("transactions", done, "per_second", done / took);
        }
    }
}
