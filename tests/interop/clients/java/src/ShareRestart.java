// Issue 28: a KafkaShareConsumer across a broker restart (clean, or kill -9), run by
// tests/interop/test_java_share.py against groupbroker and against Apache Kafka alike:
//
//   1. creates the topic (one partition), has the group start at the earliest record, and
//      produces 20 records, one batch each
//   2. consumes with explicit acknowledgement (ACCEPT) until 10 records were accepted, commits
//   3. prints {"paused": N} and waits for a line on stdin: the test restarts the broker
//   4. consumes on until all 20 were accepted, then 3 s more to see any redelivery
//   5. prints {"result": {"deliveries": [[value, delivery count], ...], "before": [...]}}

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ShareRestart {
    static final int RECORDS = 20, BEFORE = 10;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET)))).all().get();
        }
        Map<String, Object> settings = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                                              ProducerConfig.LINGER_MS_CONFIG, 0);
        try (KafkaProducer<String, String> producer =
                 new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < RECORDS; i++) producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put("share.acknowledgement.mode", "explicit");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5);
        List<Object> deliveries = new ArrayList<>();
        Set<String> accepted = new TreeSet<>();
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (accepted.size() < BEFORE && System.currentTimeMillis() < deadline) take(c, deliveries, accepted);
            List<String> before = new ArrayList<>(accepted);
            System.out.println(Json.json(Json.obj("paused", accepted.size())));
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in)).readLine();
            deadline = System.currentTimeMillis() + 90_000;
            long quietUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
                take(c, deliveries, accepted);
                if (accepted.size() == RECORDS && quietUntil == Long.MAX_VALUE) quietUntil = System.currentTimeMillis() + 3000;
            }
            System.out.println(Json.json(Json.obj("result", Json.obj("deliveries", deliveries, "before", before))));
        }
    }

    /** One poll: each record accepted; the acknowledgements committed. */
    static void take(KafkaShareConsumer<String, String> c, List<Object> deliveries, Set<String> accepted) {
        try {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                c.acknowledge(r, AcknowledgeType.ACCEPT);
                deliveries.add(List.of(r.value(), (int) r.deliveryCount().orElse((short) -1)));
                accepted.add(r.value());
            }
            c.commitSync();
        } catch (org.apache.kafka.common.KafkaException e) {
            // the broker is away (restarting): poll again, as an application would
            System.err.println("poll failed: " + e);
        }
    }
}
