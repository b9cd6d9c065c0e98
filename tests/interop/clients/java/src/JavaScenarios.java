// Issue 27: Kafka's own Java client (kafka-clients 4.3.1) run through one scenario against one
// broker, groupbroker or Apache Kafka. tests/interop/test_java_clients.py compiles this file,
// runs it against both and compares what it prints.
//
//   java -cp <kafka-clients and its dependencies>:<classes> JavaScenarios <scenario> <bootstrap> <prefix> [args...]
//
// It prints one JSON document on stdout: what the application observed, raw (ids, timings and
// hosts included); the Python side decides what may differ. Topic and group names start with
// <prefix>, so runs never share a name.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaScenarios {
    static final int PARTITIONS = 6;
    static String bootstrap;
    static String prefix;
    static final long T0 = System.currentTimeMillis();

    // ---- what the application saw --------------------------------------------------------------

    /** An exception as the application sees it: class and message, and its cause's. */
    static Map<String, Object> error(Throwable e) {
        if (e instanceof ExecutionException && e.getCause() != null) e = e.getCause();
        Map<String, Object> m = Json.obj("class", e.getClass().getName(), "message", e.getMessage());
        if (e.getCause() != null && e.getCause() != e) m.put("cause", error(e.getCause()));
        return m;
    }

    interface Call { Object run() throws Exception; }

    /** What a call returned, or the exception it threw. */
    static Object attempt(Call c) {
        try {
            return Json.obj("ok", c.run());
        } catch (Exception e) {
            return Json.obj("error", error(e));
        }
    }

    static void waitFor(String what, long timeoutMs, BooleanSupplier cond) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out waiting for " + what);
            try { Thread.sleep(20); } catch (InterruptedException e) { throw new RuntimeException(e); }
        }
    }

    static List<Integer> parts(Collection<TopicPartition> tps) {
        List<Integer> out = new ArrayList<>();
        for (TopicPartition tp : tps) out.add(tp.partition());
        Collections.sort(out);
        return out;
    }

    // ---- clients -----------------------------------------------------------------------------

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        return Admin.create(p);
    }

    static KafkaProducer<String, String> producer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.putAll(extra);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer(Map<String, Object> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.putAll(extra);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        // both brokers answer CreateTopics before every partition has a leader known to Metadata
        waitFor("topic " + topic, 15000, () -> {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                return d.partitions().size() == partitions && d.partitions().stream().allMatch(x -> x.leader() != null);
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** ``count`` records per partition, values "<tag>-<partition>-<i>"; the offsets they got. */
    static List<List<Object>> produce(String topic, int partitions, int count, String tag) throws Exception {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer(Map.of())) {
            for (int i = 0; i < count; i++)
                for (int part = 0; part < partitions; part++)
                    sent.add(p.send(new ProducerRecord<>(topic, part, "k" + i, tag + "-" + part + "-" + i)));
            p.flush();
        }
        List<List<Object>> out = new ArrayList<>();
        for (Future<RecordMetadata> f : sent) out.add(List.of(f.get().partition(), f.get().offset()));
        return out;
    }

    // ---- a group member on its own thread ----------------------------------------------------

    /** A member's assignment and generation after a poll, and how many callbacks it had run by then. */
    record Seen(Set<Integer> assignment, int generation, int events) {}

    static class Member implements Runnable {
        final String name;
        final String topic;
        final KafkaConsumer<String, String> consumer;
        final List<Map<String, Object>> events = Collections.synchronizedList(new ArrayList<>());
        final List<Map<String, Object>> batches = Collections.synchronizedList(new ArrayList<>());
        final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
        final Thread thread;
        /** what the member's thread last saw after a poll, read by the others as one piece */
        volatile Seen seen = new Seen(Set.of(), -1, 0);
        volatile String memberId = "";
        volatile boolean stop;
        volatile boolean closed;
        volatile Throwable failure;
        /** set: the next batch is "processed" until this condition holds, then committed */
        volatile BooleanSupplier slowUntil;
        volatile Map<String, Object> slowCommit;

        Member(String name, String topic, Map<String, Object> props) {
            this.name = name;
            this.topic = topic;
            Map<String, Object> p = new HashMap<>(props);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            this.consumer = consumer(p);
            this.thread = new Thread(this, name);
        }

        Member start() {
            thread.start();
            return this;
        }

        void event(String ev, Collection<TopicPartition> tps) {
            events.add(Json.obj("ev", ev, "partitions", parts(tps), "t", System.currentTimeMillis() - T0));
        }

        public void run() {
            try {
                consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    public void onPartitionsRevoked(Collection<TopicPartition> tps) { event("revoked", tps); }
                    public void onPartitionsAssigned(Collection<TopicPartition> tps) { event("assigned", tps); }
                    public void onPartitionsLost(Collection<TopicPartition> tps) { event("lost", tps); }
                });
                while (!stop) {
                    Runnable c;
                    while ((c = commands.poll()) != null) c.run();
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(50));
                    observe();
                    if (records.isEmpty()) continue;
                    List<List<Object>> got = new ArrayList<>();
                    for (ConsumerRecord<String, String> r : records) got.add(List.of(r.partition(), r.offset(), r.value()));
                    Map<String, Object> batch = Json.obj("records", got, "t", System.currentTimeMillis() - T0,
                                                    "generation", seen.generation());
                    batches.add(batch);
                    BooleanSupplier slow = slowUntil;
                    if (slow != null) {
                        slowUntil = null;
                        waitFor(name + "'s slow processing to outlast its membership", 30000, slow);
                    }
                    try {
                        consumer.commitSync();
                        batch.put("committed", true);
                    } catch (Exception e) {
                        batch.put("committed", false);
                        batch.put("error", error(e));
                    }
                    if (slow != null) slowCommit = batch;
                }
                consumer.close();
                events.add(Json.obj("ev", "closed", "t", System.currentTimeMillis() - T0));
            } catch (Throwable e) {
                failure = e;
                events.add(Json.obj("ev", "failed", "error", error(e)));
            } finally {
                closed = true;
            }
        }

        void observe() {
            Set<Integer> now = new TreeSet<>(parts(consumer.assignment()));
            ConsumerGroupMetadata meta = consumer.groupMetadata();
            memberId = meta.memberId();
            // the callbacks run inside poll on this thread: the count goes with the assignment
            seen = new Seen(Collections.unmodifiableSet(now), meta.generationId(), events.size());
        }

        void close() {
            stop = true;
            try { thread.join(30000); } catch (InterruptedException e) { throw new RuntimeException(e); }
            if (!closed) throw new IllegalStateException(name + " did not close");
        }

        Map<String, Object> report() {
            return Json.obj("name", name, "events", new ArrayList<>(events), "batches", new ArrayList<>(batches),
                       "failure", failure == null ? null : error(failure));
        }
    }

    /** The live members own every partition once, each at least one, all at one generation. */
    static boolean settled(List<Member> members, int partitions, boolean sameGeneration) {
        List<Integer> owned = new ArrayList<>();
        Set<Integer> generations = new HashSet<>();
        int least = Integer.MAX_VALUE, most = 0;
        for (Member m : members) {
            if (m.failure != null) throw new IllegalStateException(m.name + " failed", m.failure);
            Set<Integer> a = m.seen.assignment();
            if (a.isEmpty() && members.size() <= partitions) return false;
            owned.addAll(a);
            generations.add(m.seen.generation());
            least = Math.min(least, a.size());
            most = Math.max(most, a.size());
        }
        Collections.sort(owned);
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < partitions; i++) all.add(i);
        // balanced too: a consumer-protocol group passes through unbalanced complete assignments
        return owned.equals(all) && most - least <= 1 && (!sameGeneration || generations.size() == 1);
    }

    static Map<String, Object> stage(String what, List<Member> members, int partitions, boolean sameGeneration) {
        waitFor("the group to settle: " + what, 45000, () -> settled(members, partitions, sameGeneration));
        Map<String, Object> assignment = new TreeMap<>();
        Map<String, Object> generations = new TreeMap<>();
        Map<String, Object> events = new TreeMap<>();
        for (Member m : members) {
            Seen seen = m.seen;
            assignment.put(m.name, new ArrayList<>(seen.assignment()));
            generations.put(m.name, seen.generation());
            events.put(m.name, seen.events());
        }
        return Json.obj("stage", what, "assignment", assignment, "generations", generations, "events_seen", events);
    }

    static Set<String> consumedValues(List<Member> members) {
        Set<String> seen = new HashSet<>();
        for (Member m : members)
            synchronized (m.batches) {
                for (Map<String, Object> b : m.batches)
                    if (Boolean.TRUE.equals(b.get("committed")))
                        for (Object r : (List<?>) b.get("records")) seen.add((String) ((List<?>) r).get(2));
            }
        return seen;
    }

    /** Produce a round of records and wait until committed batches hold all of them. */
    static void produceAndConsume(String topic, String tag, List<Member> everyone, int perPartition) throws Exception {
        produce(topic, PARTITIONS, perPartition, tag);
        Set<String> expected = new HashSet<>();
        for (int i = 0; i < perPartition; i++)
            for (int p = 0; p < PARTITIONS; p++) expected.add(tag + "-" + p + "-" + i);
        waitFor("records " + tag + " to be consumed and committed", 45000,
                () -> consumedValues(everyone).containsAll(expected));
    }

    static Map<String, Object> committed(Admin admin, String group) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e :
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().entrySet())
            out.put(e.getKey().toString(), e.getValue() == null ? null : e.getValue().offset());
        return out;
    }

    static Map<String, Object> endOffsets(String topic, int partitions) {
        Map<String, Object> out = new TreeMap<>();
        try (KafkaConsumer<String, String> c = consumer(Map.of())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            for (Map.Entry<TopicPartition, Long> e : c.endOffsets(tps).entrySet()) out.put(e.getKey().toString(), e.getValue());
        }
        return out;
    }

    static Map<String, Object> describeGroup(Admin admin, String group) throws Exception {
        ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
        List<Map<String, Object>> members = new ArrayList<>();
        for (MemberDescription m : d.members())
            members.add(Json.obj("client_id", m.clientId(), "member_id", m.consumerId(), "instance_id", m.groupInstanceId(),
                            "host", m.host(), "assignment", parts(m.assignment().topicPartitions()),
                            "target", m.targetAssignment().map(t -> parts(t.topicPartitions())),
                            "epoch", m.memberEpoch(), "upgraded", m.upgraded()));
        members.sort(Comparator.comparing(m -> (String) m.get("client_id")));
        return Json.obj("group", d.groupId(), "simple", d.isSimpleConsumerGroup(), "type", d.type(),
                   "state", d.groupState(), "assignor", d.partitionAssignor(), "group_epoch", d.groupEpoch(),
                   "target_epoch", d.targetAssignmentEpoch(), "coordinator", d.coordinator().id(), "members", members);
    }

    /** The group as described once its coordinator calls it Stable: each member's epoch catches
     *  up with the group's at its next heartbeat, so a description taken as soon as the members
     *  hold their partitions shows a moment that differs from one broker, or run, to the next. */
    static Map<String, Object> describeStable(Admin admin, String group) throws Exception {
        long deadline = System.currentTimeMillis() + 45000;
        while (true) {
            Map<String, Object> d = describeGroup(admin, group);
            if ("stable".equalsIgnoreCase(String.valueOf(d.get("state"))) || System.currentTimeMillis() > deadline)
                return d;
            Thread.sleep(100);
        }
    }

    static Map<String, Object> groupProps(String group, String protocol, String assignor, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, "org.apache.kafka.clients.consumer." + assignor);
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6000);
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 200);
        } else if (assignor != null) {
            p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
        }
        p.putAll(extra);
        return p;
    }

    // ---- scenarios ---------------------------------------------------------------------------

    /** 1 and 2: three members join one by one, a fourth joins, the first leaves; each round of
     *  records is consumed and committed; committed offsets read back. */
    static Object lifecycle(String protocol, String assignor, String lateProtocol) throws Exception {
        String topic = prefix + "-t", group = prefix + "-g";
        boolean sameGen = protocol.equals("classic");
        List<Object> stages = new ArrayList<>();
        List<Member> everyone = new ArrayList<>(), live = new ArrayList<>();
        try (Admin admin = admin()) {
            createTopic(admin, topic, PARTITIONS);
            for (String name : List.of("c1", "c2", "c3")) {
                Member m = new Member(name, topic, groupProps(group, protocol, assignor, Map.of())).start();
                everyone.add(m);
                live.add(m);
                stages.add(stage("joined " + name, live, PARTITIONS, sameGen));
            }
            produceAndConsume(topic, "a", everyone, 10);
            String p4 = lateProtocol == null ? protocol : lateProtocol;
            Member c4 = new Member("c4", topic, groupProps(group, p4, p4.equals(protocol) ? assignor : "RangeAssignor", Map.of())).start();
            everyone.add(c4);
            live.add(c4);
            stages.add(stage("joined c4", live, PARTITIONS, sameGen && lateProtocol == null));
            Map<String, Object> described = describeStable(admin, group);
            produceAndConsume(topic, "b", everyone, 10);
            Member c1 = live.remove(0);
            c1.close();
            stages.add(stage("c1 left", live, PARTITIONS, sameGen && lateProtocol == null));
            produceAndConsume(topic, "c", everyone, 10);
            for (Member m : live) m.close();
            List<Object> reports = new ArrayList<>();
            for (Member m : everyone) reports.add(m.report());
            return Json.obj("stages", stages, "described_with_four", described, "members", reports,
                       "committed", committed(admin, group), "end_offsets", endOffsets(topic, PARTITIONS),
                       "after", describeGroup(admin, group));
        } finally {
            for (Member m : everyone) m.stop = true;
        }
    }

    /** 3: static members; one restarts within the session timeout. */
    static Object staticMembership(String protocol) throws Exception {
        String topic = prefix + "-t", group = prefix + "-g";
        boolean sameGen = protocol.equals("classic");
        List<Object> stages = new ArrayList<>();
        List<Member> everyone = new ArrayList<>(), live = new ArrayList<>();
        try (Admin admin = admin()) {
            createTopic(admin, topic, PARTITIONS);
            for (String name : List.of("s1", "s2", "s3")) {
                Member m = new Member(name, topic, groupProps(group, protocol, assignor(protocol),
                        Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "instance-" + name))).start();
                everyone.add(m);
                live.add(m);
                JavaScenarios.stage("joined " + name, live, PARTITIONS, sameGen);
            }
            stages.add(stage("three static members", live, PARTITIONS, sameGen));
            Map<String, Object> before = describeGroup(admin, group);
            produceAndConsume(topic, "a", everyone, 5);
            Member s2 = live.remove(1);
            s2.close();
            Map<String, Object> whileAway = describeGroup(admin, group);
            Member again = new Member("s2-again", topic, groupProps(group, protocol, assignor(protocol),
                    Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "instance-s2"))).start();
            everyone.add(again);
            live.add(1, again);
            stages.add(stage("s2 restarted", live, PARTITIONS, sameGen));
            produceAndConsume(topic, "b", everyone, 5);
            Map<String, Object> after = describeGroup(admin, group);
            for (Member m : live) m.close();
            List<Object> reports = new ArrayList<>();
            for (Member m : everyone) reports.add(m.report());
            return Json.obj("stages", stages, "before", before, "while_away", whileAway, "after", after,
                       "members", reports, "committed", committed(admin, group),
                       "end_offsets", endOffsets(topic, PARTITIONS));
        } finally {
            for (Member m : everyone) m.stop = true;
        }
    }

    static String assignor(String protocol) {
        return protocol.equals("classic") ? "RangeAssignor" : "range";
    }

    /** 4: a member whose processing outlasts max.poll.interval.ms commits too late. */
    static Object slowConsumer(String protocol) throws Exception {
        String topic = prefix + "-t", group = prefix + "-g";
        boolean sameGen = protocol.equals("classic");
        List<Object> stages = new ArrayList<>();
        List<Member> everyone = new ArrayList<>();
        try (Admin admin = admin()) {
            createTopic(admin, topic, PARTITIONS);
            Map<String, Object> extra = Map.of(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 1500);
            Member slow = new Member("slow", topic, groupProps(group, protocol, assignor(protocol), extra)).start();
            everyone.add(slow);
            stages.add(stage("slow alone", everyone, PARTITIONS, sameGen));
            Member other = new Member("other", topic, groupProps(group, protocol, assignor(protocol), extra)).start();
            everyone.add(other);
            stages.add(stage("two members", everyone, PARTITIONS, sameGen));
            slow.slowUntil = () -> other.seen.assignment().size() == PARTITIONS;
            produceAndConsume(topic, "a", everyone, 10);
            waitFor("the slow member's late commit", 30000, () -> slow.slowCommit != null);
            stages.add(stage("slow member back", everyone, PARTITIONS, sameGen));
            produceAndConsume(topic, "b", everyone, 5);
            for (Member m : everyone) m.close();
            List<Object> reports = new ArrayList<>();
            for (Member m : everyone) reports.add(m.report());
            return Json.obj("stages", stages, "late_commit", slow.slowCommit, "members", reports,
                       "committed", committed(admin, group), "end_offsets", endOffsets(topic, PARTITIONS));
        } finally {
            for (Member m : everyone) m.stop = true;
        }
    }

    // ---- dispatch ----------------------------------------------------------------------------

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        bootstrap = args[1];
        prefix = args[2];
        Object result = switch (scenario) {
            case "classic" -> lifecycle("classic", args[3], null);
            case "consumer" -> lifecycle("consumer", args[3], null);
            case "mixed" -> lifecycle("consumer", args[3], "classic");
            case "static" -> staticMembership(args[3]);
            case "slow" -> slowConsumer(args[3]);
            case "transactions" -> Transactions.run();
            case "admin" -> AdminScenario.run(Long.parseLong(args[3]));
            case "share" -> ShareScenario.run(args[3]);
            case "eos-worker" -> EosWorker.run(args[3], java.nio.file.Path.of(args[4]));
            case "txn-bench" -> TxnBench.run(Double.parseDouble(args[3]));
            default -> throw new IllegalArgumentException("unknown scenario " + scenario);
        };
        System.out.println(Json.json(result));
        System.out.flush();
        System.exit(0);
    }
}
