// Issue 28: Kafka's KafkaShareConsumer (kafka-clients 4.3.1) in a share group, run by
// JavaScenarios against one broker. Scenarios:
//
//   explicit  one member acknowledges each record: RELEASE once (redelivered, then ACCEPT), REJECT
//             (never again), a poison record RELEASEd until the delivery limit archives it
//   implicit  two members share one partition with implicit acknowledgement: every record is
//             delivered once, to one of them
//   crash     a member takes records and goes silent; after the lock duration another member
//             gets them again, with delivery count 2
//
// What each member received (value, delivery count, what it did) is printed as JSON.

import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareScenario {
    static final int RECORDS = 12;

    static KafkaShareConsumer<String, String> member(String group, String mode) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, JavaScenarios.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put("share.acknowledgement.mode", mode);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        return new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    /** The group's configs: from the start of the log, at most 3 deliveries, 2 s locks. */
    static void configure(Admin admin, String group) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = List.of(
            new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("share.delivery.count.limit", "3"), AlterConfigOp.OpType.SET),
            new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", "2000"), AlterConfigOp.OpType.SET));
        admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
    }

    static void produce(String topic, int from, int count) throws Exception {
        try (KafkaProducer<String, String> producer = JavaScenarios.producer(Map.of())) {
            for (int i = from; i < from + count; i++) producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
            producer.flush();
        }
    }

    static Map<String, Object> delivery(ConsumerRecord<String, String> r, String action) {
        return Json.obj("value", r.value(), "offset", r.offset(), "delivery_count", r.deliveryCount().orElse((short) -1),
                        "action", action);
    }

    static Object explicit(String topic, String group) throws Exception {
        List<Object> seen = new ArrayList<>();
        Set<String> done = new HashSet<>();
        int poison = 0;
        try (KafkaShareConsumer<String, String> c = member(group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60000;
            while ((done.size() < RECORDS || poison < 3) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    AcknowledgeType type;
                    if (r.value().equals("v3")) {
                        type = r.deliveryCount().get() == 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
                    } else if (r.value().equals("v5")) {
                        type = AcknowledgeType.REJECT;
                    } else if (r.value().equals("v7")) {
                        type = AcknowledgeType.RELEASE;
                        poison++;
                    } else {
                        type = AcknowledgeType.ACCEPT;
                    }
                    c.acknowledge(r, type);
                    seen.add(delivery(r, type.name()));
                    if (type != AcknowledgeType.RELEASE || r.value().equals("v7")) done.add(r.value());
                }
                c.commitSync();
            }
            // nothing more comes: the poison record is archived at its third delivery
            int more = c.poll(Duration.ofMillis(2500)).count();
            return Json.obj("deliveries", seen, "after", more);
        }
    }

    static Object implicit(String topic, String group) throws Exception {
        Map<String, List<Object>> seen = new TreeMap<>();
        try (KafkaShareConsumer<String, String> a = member(group, "implicit");
             KafkaShareConsumer<String, String> b = member(group, "implicit")) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Set<String> values = new TreeSet<>();
            int total = 0;
            long deadline = System.currentTimeMillis() + 60000;
            while (values.size() < RECORDS && System.currentTimeMillis() < deadline) {
                for (var entry : Map.of("a", a, "b", b).entrySet()) {
                    for (ConsumerRecord<String, String> r : entry.getValue().poll(Duration.ofMillis(100))) {
                        seen.computeIfAbsent(entry.getKey(), k -> new ArrayList<>()).add(delivery(r, "implicit"));
                        values.add(r.value());
                        total++;
                    }
                }
            }
            return Json.obj("distinct", values.size(), "total", total, "counts",
                            seen.values().stream().flatMap(List::stream).map(d -> ((Map<?, ?>) d).get("delivery_count")).distinct().toList());
        }
    }

    static Object crash(String topic, String group) throws Exception {
        List<Object> first = new ArrayList<>(), second = new ArrayList<>();
        KafkaShareConsumer<String, String> silent = member(group, "explicit");
        try (KafkaShareConsumer<String, String> other = member(group, "explicit")) {
            silent.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60000;
            while (first.isEmpty() && System.currentTimeMillis() < deadline) {     // one poll's records
                for (ConsumerRecord<String, String> r : silent.poll(Duration.ofMillis(200))) first.add(delivery(r, "none"));
            }
            // the silent member never acknowledges: its locks run out, the records go to another
            other.subscribe(List.of(topic));
            deadline = System.currentTimeMillis() + 60000;
            while (second.size() < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : other.poll(Duration.ofMillis(200))) {
                    other.acknowledge(r, AcknowledgeType.ACCEPT);
                    second.add(delivery(r, "ACCEPT"));
                }
                other.commitSync();
            }
        } finally {
            silent.close(Duration.ZERO);
        }
        return Json.obj("silent", first, "other", second);
    }

    static Object run(String mode) throws Exception {
        String topic = JavaScenarios.prefix + "-share", group = JavaScenarios.prefix + "-group";
        try (Admin admin = JavaScenarios.admin()) {
            JavaScenarios.createTopic(admin, topic, 1);
            configure(admin, group);
            produce(topic, 0, RECORDS);
            Object result = switch (mode) {
                case "explicit" -> explicit(topic, group);
                case "implicit" -> implicit(topic, group);
                case "crash" -> crash(topic, group);
                default -> throw new IllegalArgumentException(mode);
            };
            return Json.obj("mode", mode, "result", result);
        }
    }
}
