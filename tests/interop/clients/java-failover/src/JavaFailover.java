// Issue 27, part 5: a group of Kafka Java consumers (kafka-clients 4.3.1) reading while the cluster
// changes under it. tests/interop/test_java_failover.py compiles and drives this program:
//
//   java -cp <kafka-clients and its dependencies>:<classes> JavaFailover <bootstrap> <topic> <group> <protocol>
//        <members> <partitions> <replication factor> <records per partition and phase>
//
// <protocol> is "classic" or "consumer" (group.protocol). The program
//  1. creates the topic, writes <per-partition> records into every partition, starts <members>
//     consumers in one group (each on its own thread: poll, then commitSync of what it polled),
//     waits until the group has settled (every partition owned by exactly one member, every
//     member owning some, all in one generation or member epoch) and every record is consumed
//     and committed, and prints {"settled": ...} on stdout;
//  2. waits for one line on stdin: the test changes the cluster meanwhile (or not);
//  3. writes <per-partition> more records per partition, waits until they are consumed and
//     committed too, keeps polling for QUIET_MS more (a late rebalance would show), closes the
//     members and prints one JSON document of everything the application observed.
// Output is raw (ids and times included); the Python side judges it.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaFailover {
    static final long T0 = System.currentTimeMillis();
    static final long QUIET_MS = 1500;
    static String bootstrap, topic, group, protocol;

    static long now() { return System.currentTimeMillis() - T0; }

    static void waitFor(String what, long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            Thread.sleep(20);
        }
    }

    static List<Integer> parts(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) out.add(tp.partition());
        Collections.sort(out);
        return out;
    }

    // ---- one member --------------------------------------------------------------------------

    /** A consumer on its own thread; what it saw is read by the main thread. */
    static class Member implements Runnable, ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<String, String> consumer;
        final List<Map<String, Object>> events = Collections.synchronizedList(new ArrayList<>());
        final List<Map<String, Object>> batches = Collections.synchronizedList(new ArrayList<>());
        /** every (generation or member epoch, member id) the member reported after a poll, in order */
        final List<List<Object>> identities = Collections.synchronizedList(new ArrayList<>());
        final Set<List<Integer>> committed = ConcurrentHashMap.newKeySet();
        final Thread thread;
        volatile Set<Integer> assignment = Set.of();
        volatile int generation = -1;
        volatile String memberId = "";
        volatile boolean stop;
        volatile Map<String, Object> failure;

        Member(String name) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 20);
            // a moved leader is learnt from the errors and dropped connections it causes, never
            // from a periodic metadata refresh (metadata.max.age.ms stays 5 minutes); reconnects and
            // retries stay short
            p.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
            p.put(ConsumerConfig.RECONNECT_BACKOFF_MS_CONFIG, 50);
            p.put(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200);
            p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
            if (protocol.equals("classic")) {
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300);
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
            }
            consumer = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
            thread = new Thread(this, name);
        }

        void event(String ev, Collection<TopicPartition> tps) {
            events.add(Json.obj("ev", ev, "partitions", parts(tps), "t", now()));
        }

        @Override public void onPartitionsRevoked(Collection<TopicPartition> tps) {
            event("revoked", tps);
            Set<Integer> left = new HashSet<>(assignment);
            left.removeAll(parts(tps));
            assignment = Set.copyOf(left);
        }

        @Override public void onPartitionsAssigned(Collection<TopicPartition> tps) {
            event("assigned", tps);
            Set<Integer> now = new HashSet<>(assignment);
            now.addAll(parts(tps));
            assignment = Set.copyOf(now);
        }

        @Override public void onPartitionsLost(Collection<TopicPartition> tps) {
            event("lost", tps);
            Set<Integer> left = new HashSet<>(assignment);
            left.removeAll(parts(tps));
            assignment = Set.copyOf(left);
        }

        public void run() {
            try {
                consumer.subscribe(List.of(topic), this);
                while (!stop) {
                    ConsumerRecords<String, String> polled = consumer.poll(Duration.ofMillis(100));
                    ConsumerGroupMetadata meta = consumer.groupMetadata();
                    if (meta.generationId() != generation || !meta.memberId().equals(memberId)) {
                        // recorded before it is published: a snapshot that sees it counts it
                        identities.add(List.of(meta.generationId(), meta.memberId(), now()));
                        memberId = meta.memberId();
                        generation = meta.generationId();
                    }
                    if (polled.isEmpty()) continue;
                    List<List<Object>> records = new ArrayList<>();
                    Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                    for (ConsumerRecord<String, String> r : polled) {
                        records.add(List.of(r.partition(), r.offset(), r.leaderEpoch().orElse(-1)));
                        next.put(new TopicPartition(r.topic(), r.partition()),
                                 new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), ""));
                    }
                    Map<String, Object> batch = Json.obj("records", records, "t", now(), "generation", generation,
                                                    "committed", null);
                    batches.add(batch);
                    try {
                        consumer.commitSync(next);
                        batch.put("committed", true);
                        for (List<Object> r : records) committed.add(List.of((Integer) r.get(0), ((Long) r.get(1)).intValue()));
                    } catch (KafkaException e) {
                        batch.put("committed", false);
                        batch.put("error", e.getClass().getName() + ": " + e.getMessage());
                    }
                }
                event("closing", List.of());
            } catch (Throwable e) {
                failure = Json.obj("class", e.getClass().getName(), "message", String.valueOf(e.getMessage()), "t", now());
            } finally {
                consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
            }
        }

        Map<String, Object> report() {
            synchronized (events) {
                synchronized (batches) {
                    return Json.obj("name", name, "events", new ArrayList<>(events), "batches", new ArrayList<>(batches),
                               "identities", new ArrayList<>(identities), "failure", failure);
                }
            }
        }
    }

    // ---- the run -----------------------------------------------------------------------------

    /** ``count`` records into every partition; their (partition, offset)s. */
    static List<List<Integer>> produce(int partitions, int count, String tag) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        p.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200);
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < count; i++)
                for (int part = 0; part < partitions; part++)
                    sent.add(producer.send(new ProducerRecord<>(topic, part, "k" + i, tag + "-" + part + "-" + i)));
            producer.flush();
        }
        List<List<Integer>> out = new ArrayList<>();
        for (Future<RecordMetadata> f : sent) out.add(List.of(f.get().partition(), (int) f.get().offset()));
        return out;
    }

    static boolean settled(List<Member> members, int partitions) {
        List<Integer> owned = new ArrayList<>();
        Set<Integer> generations = new HashSet<>();
        for (Member m : members) {
            if (m.assignment.isEmpty() || m.generation < 0) return false;
            owned.addAll(m.assignment);
            generations.add(m.generation);
        }
        if (generations.size() != 1) return false;      // a consumer group's members reconcile one by one
        Collections.sort(owned);
        List<Integer> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) all.add(p);
        return owned.equals(all);
    }

    static boolean allCommitted(List<Member> members, List<List<Integer>> produced) {
        Set<List<Integer>> done = new HashSet<>();
        for (Member m : members) done.addAll(m.committed);
        return done.containsAll(produced);
    }

    static Map<String, Object> snapshot(List<Member> members) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Member m : members) {
            List<Integer> a = new ArrayList<>(m.assignment);
            Collections.sort(a);
            int generation = m.generation;     // read first: the identities it counts include it
            out.put(m.name, Json.obj("assignment", a, "generation", generation, "member_id", m.memberId,
                                "events_seen", m.events.size(), "identities_seen", m.identities.size()));
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        topic = args[1];
        group = args[2];
        protocol = args[3];
        int count = Integer.parseInt(args[4]);
        int partitions = Integer.parseInt(args[5]);
        short replication = Short.parseShort(args[6]);
        int perPartition = Integer.parseInt(args[7]);
        Map<String, Object> doc = new LinkedHashMap<>();
        List<Member> members = new ArrayList<>();
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        adminProps.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, replication))).all().get();
            waitFor("every partition of " + topic + " to have a leader", 15000, () -> {
                try {
                    TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                    return d.partitions().size() == partitions && d.partitions().stream().allMatch(x -> x.leader() != null);
                } catch (Exception e) {
                    return false;
                }
            });
            List<List<Integer>> produced = new ArrayList<>(produce(partitions, perPartition, "before"));
            for (int i = 0; i < count; i++) members.add(new Member("c" + i));
            for (Member m : members) m.thread.start();
            try {
                waitFor("the group to settle with every record committed", 30000,
                        () -> settled(members, partitions) && allCommitted(members, produced));
                Map<String, Object> settled = snapshot(members);
                doc.put("settled", settled);
                doc.put("settled_t", now());
                System.out.println(Json.json(Json.obj("settled", settled)));
                System.out.flush();
                String line = new BufferedReader(new InputStreamReader(System.in)).readLine();
                doc.put("resumed_t", now());
                doc.put("told", line);
                produced.addAll(produce(partitions, perPartition, "after"));
                doc.put("produced_t", now());
                waitFor("every record after the change committed", 30000, () -> allCommitted(members, produced));
                doc.put("caught_up_t", now());
                Thread.sleep(QUIET_MS);
                doc.put("end", snapshot(members));
            } catch (Exception e) {
                doc.put("failure", Json.obj("class", e.getClass().getName(), "message", String.valueOf(e.getMessage())));
                doc.put("end", snapshot(members));
            } finally {
                for (Member m : members) m.stop = true;
                for (Member m : members) m.thread.join(15000);
            }
            List<Object> reports = new ArrayList<>();
            for (Member m : members) reports.add(m.report());
            doc.put("members", reports);
            doc.put("produced", produced);
            Map<String, Object> committed = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet())
                committed.put(String.valueOf(e.getKey().partition()),
                              List.of(e.getValue().offset(), e.getValue().leaderEpoch().orElse(-1)));
            doc.put("committed", committed);
        }
        System.out.println(Json.json(doc));
        System.out.flush();
    }
}
