// Issue 27, part 4: a Kafka Streams application (kafka-streams 4.3.1) run against one broker,
// groupbroker or Apache Kafka, with the classic group protocol or (-Dgroup.protocol=streams, issue
// 29) the streams rebalance protocol of KIP-1071, where the broker assigns the tasks. tests/interop/test_kafka_streams.py compiles this
// file, runs it against both at once and compares what it prints.
//
//   java -cp <classes>:<Kafka's jars> StreamsScenarios <scenario> <bootstrap> <prefix> <state dir>
//
// The application is a word count: lines -> words -> repartition by word -> count (a RocksDB store
// with its changelog) -> an output topic of (word, count). The store's cache is off, so every count
// update is one changelog record and one output record: a word's outputs read with read_committed
// must be exactly 1, 2, ..., n. Words are chosen so that each line holds one word of each
// repartition partition: every partition of the store gets LINES updates per batch, which makes the
// records a restore reads known in advance.
//
// Scenarios (one JSON document on stdout, the last line):
//   failover     two KafkaStreams instances (a, b) in this JVM, at_least_once; b leaves, a takes
//                its tasks over and restores them from the changelog
//   eos-crash    one instance, exactly_once_v2; halts the JVM (Runtime.halt: no close, no shutdown
//                hook) while a transaction is open, once its first output is in the topic
//   eos-restart  the same application and state dir again: it resumes and finishes the input
//   scale        exactly_once_v2 with one standby replica: one instance, then three (tasks and
//                standbys spread), then two (one leaves); counts exact throughout
//   startup      three instances started at once: how long until all run with the tasks spread
//   eos-takeover exactly_once_v2 with two instances: a in this JVM, b in a child JVM (eos-member)
//                that halts with a transaction open; a takes b's tasks over once b's session has
//                expired, and their records once the broker has aborted b's transaction (timed out)

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

public class StreamsScenarios {
    static final int PARTITIONS = 4;
    static final int WORDS_PER_PARTITION = 3;
    static final int LINES = 40;                 // per batch; each line one word per store partition
    static final long WAIT_MS = 45000;
    static final String PROTOCOL = System.getProperty("group.protocol", "classic");
    static int standbys = 0;                     // num.standby.replicas (scale)

    static String bootstrap, prefix;
    static File stateRoot;
    static final long T0 = System.currentTimeMillis();
    static volatile String stage = "start";

    static String input() { return prefix + "-lines"; }
    static String output() { return prefix + "-counts"; }
    static String appId() { return prefix + "-app"; }

    public static void main(String[] args) throws Exception {
        String scenario = args[0];
        bootstrap = args[1];
        prefix = args[2];
        stateRoot = new File(args[3]);
        Map<String, Object> doc = switch (scenario) {
            case "failover" -> failover();
            case "eos-crash" -> eosCrash();
            case "eos-restart" -> eosRestart();
            case "eos-takeover" -> eosTakeover();
            case "eos-member" -> eosMember();
            case "scale" -> scale();
            case "startup" -> startup();
            default -> throw new IllegalArgumentException(scenario);
        };
        System.out.println(Json.json(doc));
        System.out.flush();
        System.exit(0);
    }

    // ---- the words and the input -------------------------------------------------------------

    /** WORDS_PER_PARTITION words for each partition of the repartition topic (its default partitioner). */
    static List<List<String>> words() {
        List<List<String>> byPartition = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) byPartition.add(new ArrayList<>());
        for (int i = 0; byPartition.stream().anyMatch(l -> l.size() < WORDS_PER_PARTITION); i++) {
            String w = "w" + i;
            int p = Utils.toPositive(Utils.murmur2(w.getBytes(StandardCharsets.UTF_8))) % PARTITIONS;
            if (byPartition.get(p).size() < WORDS_PER_PARTITION) byPartition.get(p).add(w);
        }
        return byPartition;
    }

    /** Batch ``batch``'s lines: line i goes to input partition i % PARTITIONS. */
    static void produceBatch(int batch) throws Exception {
        List<List<String>> words = words();
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.LINGER_MS_CONFIG, 5), new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < LINES; i++) {
                StringJoiner line = new StringJoiner(" ");
                for (int part = 0; part < PARTITIONS; part++)
                    line.add(words.get(part).get((i / (part + 1) + batch) % WORDS_PER_PARTITION));
                sent.add(p.send(new ProducerRecord<>(input(), i % PARTITIONS, "b" + batch + "-" + i, line.toString())));
            }
            for (Future<RecordMetadata> f : sent) f.get();
        }
    }

    /** Every word's count in the input topic as it is now, read by a plain consumer. */
    static Map<String, Long> expectedCounts() {
        Map<String, Long> counts = new TreeMap<>();
        for (String value : readAll(input(), "read_committed", new StringDeserializer()).values().stream()
                .flatMap(List::stream).map(ConsumerRecord::value).toList())
            for (String w : value.split(" ")) counts.merge(w, 1L, Long::sum);
        return counts;
    }

    // ---- the application ---------------------------------------------------------------------

    static volatile boolean armed = false;
    static final CompletableFuture<List<Object>> fired = new CompletableFuture<>();

    /** Once armed: the first count update after it blocks its stream thread for good, after its
     *  output record was handed to the producer (the sink comes first among the node's children). */
    static void trigger(String word, Long count) {
        if (!armed) return;
        armed = false;
        fired.complete(List.of(word, count));
        while (true) {
            try { Thread.sleep(60000); } catch (InterruptedException e) { /* stay */ }
        }
    }

    static Topology topology() {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, Long> counts = builder.stream(input(), Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()));
        KStream<String, Long> updates = counts.toStream();
        updates.to(output(), Produced.with(Serdes.String(), Serdes.Long()));
        updates.foreach(StreamsScenarios::trigger);
        return builder.build();
    }

    /** One KafkaStreams instance and what it reported: its state transitions and restores. */
    static class Instance {
        final String name;
        final KafkaStreams streams;
        final List<List<Object>> transitions = Collections.synchronizedList(new ArrayList<>());
        final List<Map<String, Object>> restores = Collections.synchronizedList(new ArrayList<>());

        Instance(String name, boolean eos) {
            this.name = name;
            Properties p = props(
                    StreamsConfig.APPLICATION_ID_CONFIG, appId(),
                    StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    StreamsConfig.CLIENT_ID_CONFIG, prefix + "-" + name,
                    StreamsConfig.GROUP_PROTOCOL_CONFIG, PROTOCOL,
                    StreamsConfig.STATE_DIR_CONFIG, new File(stateRoot, name).getPath(),
                    StreamsConfig.PROCESSING_GUARANTEE_CONFIG, eos ? StreamsConfig.EXACTLY_ONCE_V2 : StreamsConfig.AT_LEAST_ONCE,
                    StreamsConfig.REPLICATION_FACTOR_CONFIG, 1,
                    StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1,
                    StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, standbys,
                    StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100,
                    StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0,
                    StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 100,
                    StreamsConfig.POLL_MS_CONFIG, 20,
                    StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 2000,
                    StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 300,
                    StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG), 20000,
                    StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), 50,
                    StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5,
                    // a killed instance's open transaction holds its partitions' readers back until
                    // the broker aborts it: 5 s after it began, at the broker's next check
                    StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 5000);
            streams = new KafkaStreams(topology(), p);
            streams.setStateListener((now, before) -> transitions.add(List.of(stage, before.name(), now.name())));
            streams.setGlobalStateRestoreListener(new StateRestoreListener() {
                public void onRestoreStart(TopicPartition tp, String store, long start, long end) {}
                public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {}
                public void onRestoreEnd(TopicPartition tp, String store, long total) {
                    restores.add(Json.obj("stage", stage, "topic", tp.topic().substring(appId().length() + 1),
                            "partition", tp.partition(), "store", store, "restored", total));
                }
            });
        }

        /** The active tasks of this instance: "subtopology_partition", sorted. */
        List<String> tasks() {
            List<String> out = new ArrayList<>();
            for (ThreadMetadata t : streams.metadataForLocalThreads())
                for (TaskMetadata task : t.activeTasks()) out.add(task.taskId().toString());
            Collections.sort(out);
            return out;
        }

        /** Its standby tasks, sorted. */
        List<String> standbyTasks() {
            List<String> out = new ArrayList<>();
            for (ThreadMetadata t : streams.metadataForLocalThreads())
                for (TaskMetadata task : t.standbyTasks()) out.add(task.taskId().toString());
            Collections.sort(out);
            return out;
        }

        boolean runningWith(int tasks) {
            return streams.state() == KafkaStreams.State.RUNNING && tasks().size() == tasks;
        }
    }

    // ---- scenarios ---------------------------------------------------------------------------

    static Map<String, Object> failover() throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            createTopics(admin);
            Instance a = new Instance("a", false), b = new Instance("b", false);
            List<Map<String, Object>> stages = new ArrayList<>();

            stage = "a_alone";
            a.streams.start();
            waitFor("a running with every task", () -> a.runningWith(2 * PARTITIONS));
            stages.add(Json.obj("stage", stage, "tasks", Json.obj("a", a.tasks())));

            stage = "both";
            b.streams.start();
            waitFor("a and b running, sharing the tasks", () -> stable(() ->
                    a.streams.state() == KafkaStreams.State.RUNNING && b.streams.state() == KafkaStreams.State.RUNNING
                    && a.tasks().size() > 0 && b.tasks().size() > 0 && a.tasks().size() + b.tasks().size() == 2 * PARTITIONS));
            stages.add(Json.obj("stage", stage, "tasks", Json.obj("a", a.tasks(), "b", b.tasks()), "group", group(admin)));

            OutputReader committed = new OutputReader("read_committed");
            produceBatch(0);
            Map<String, Long> first = expectedCounts();
            committed.waitForCounts(first);

            stage = "b_left";
            b.streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
            waitFor("a running with every task again", () -> stable(() -> a.runningWith(2 * PARTITIONS)));
            stages.add(Json.obj("stage", stage, "tasks", Json.obj("a", a.tasks()), "group", group(admin)));

            stage = "a_alone_again";
            produceBatch(1);
            Map<String, Long> expected = expectedCounts();
            committed.waitForCounts(expected);

            doc.put("stages", stages);
            doc.put("expected", expected);
            doc.put("counts", committed.lastCounts());
            doc.put("outputs", committed.values);
            doc.put("purged_repartition", waitPurged(admin));
            doc.put("committed_input", committed(admin, input()));
            doc.put("input_ends", ends(admin, input()));
            doc.put("committed_repartition", committed(admin, appId() + "-words-repartition"));
            doc.put("internal_topics", internalTopics(admin));
            committed.close();

            stage = "close";
            a.streams.close(Duration.ofSeconds(30));
            doc.put("transitions", Json.obj("a", a.transitions, "b", b.transitions));
            doc.put("restores", Json.obj("a", a.restores, "b", b.restores));
        }
        return doc;
    }

    /** The instances all RUNNING, holding every active task and ``standby`` standby tasks. */
    static boolean spread(List<Instance> instances, int standby) {
        int active = 0, held = 0;
        for (Instance i : instances) {
            if (i.streams.state() != KafkaStreams.State.RUNNING || i.tasks().isEmpty()) return false;
            active += i.tasks().size();
            held += i.standbyTasks().size();
        }
        return active == 2 * PARTITIONS && held == standby;
    }

    static Map<String, Object> placement(List<Instance> instances) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Instance i : instances) out.put(i.name, Json.obj("active", i.tasks(), "standby", i.standbyTasks()));
        return out;
    }

    /** With the streams protocol the broker decides the standbys: the group config. */
    static void oneStandby(Admin admin) throws Exception {
        standbys = 1;
        if (PROTOCOL.equals("streams")) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, appId());
            admin.incrementalAlterConfigs(Map.of(group, List.of(new AlterConfigOp(
                    new ConfigEntry("streams.num.standby.replicas", "1"), AlterConfigOp.OpType.SET)))).all().get();
        }
    }

    static Map<String, Object> scale() throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            createTopics(admin);
            oneStandby(admin);
            Instance a = new Instance("a", true), b = new Instance("b", true), c = new Instance("c", true);
            List<Map<String, Object>> stages = new ArrayList<>();
            OutputReader committed = new OutputReader("read_committed");

            stage = "one";
            a.streams.start();
            waitFor("a running with every task", () -> stable(() -> spread(List.of(a), 0)));
            stages.add(Json.obj("stage", stage, "tasks", placement(List.of(a))));
            produceBatch(0);
            committed.waitForCounts(expectedCounts());

            stage = "three";
            b.streams.start();
            c.streams.start();
            waitFor("three instances sharing the tasks and the standbys", () -> stable(() -> spread(List.of(a, b, c), PARTITIONS)));
            stages.add(Json.obj("stage", stage, "tasks", placement(List.of(a, b, c)), "group", group(admin)));
            produceBatch(1);
            committed.waitForCounts(expectedCounts());

            stage = "two";
            c.streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
            waitFor("two instances sharing the tasks and the standbys", () -> stable(() -> spread(List.of(a, b), PARTITIONS)));
            stages.add(Json.obj("stage", stage, "tasks", placement(List.of(a, b)), "group", group(admin)));
            produceBatch(2);
            Map<String, Long> expected = expectedCounts();
            committed.waitForCounts(expected);

            doc.put("stages", stages);
            doc.put("expected", expected);
            doc.put("counts", committed.lastCounts());
            doc.put("outputs", committed.values);
            doc.put("output_records", committed.records);
            doc.put("committed_input", committed(admin, input()));
            doc.put("input_ends", ends(admin, input()));
            committed.close();
            stage = "close";
            for (Instance i : List.of(a, b)) i.streams.close(Duration.ofSeconds(30));
            doc.put("transitions", Json.obj("a", a.transitions, "b", b.transitions, "c", c.transitions));
        }
        return doc;
    }

    /** Three instances started at once; the milliseconds until they all run with the tasks
     *  spread (the bench's figure), from the first start. */
    static Map<String, Object> startup() throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            createTopics(admin);
            List<Instance> all = List.of(new Instance("a", false), new Instance("b", false), new Instance("c", false));
            long began = System.nanoTime();
            for (Instance i : all) i.streams.start();
            waitFor("three instances running", () -> spread(all, 0));
            doc.put("running_ms", (System.nanoTime() - began) / 1_000_000);
            doc.put("tasks", placement(all));
            for (Instance i : all) i.streams.close(Duration.ofSeconds(30));
        }
        return doc;
    }

    static Map<String, Object> eosCrash() throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            createTopics(admin);
            Instance s = new Instance("s", true);
            stage = "first";
            s.streams.start();
            waitFor("running with every task", () -> s.runningWith(2 * PARTITIONS));
            doc.put("tasks", s.tasks());

            OutputReader committed = new OutputReader("read_committed");
            produceBatch(0);
            Map<String, Long> first = expectedCounts();
            committed.waitForCounts(first);
            doc.put("first_batch", first);

            stage = "second";
            armed = true;
            produceBatch(1);
            List<Object> update = fired.get(WAIT_MS, TimeUnit.MILLISECONDS);
            String word = (String) update.get(0);
            long count = (Long) update.get(1);
            // the update's output record is in the topic, inside the transaction still open
            try (OutputReader uncommitted = new OutputReader("read_uncommitted")) {
                uncommitted.waitFor("the open transaction's output", () -> uncommitted.values.getOrDefault(word, List.of()).contains(count));
            }
            committed.pollFor(Duration.ofMillis(300));
            doc.put("open_update", Json.obj("word", word, "count", count));
            doc.put("open_update_committed", committed.values.getOrDefault(word, List.of()).contains(count));
            doc.put("transitions", s.transitions);
            doc.put("restores", s.restores);
        }
        System.out.println(Json.json(doc));
        System.out.flush();
        Runtime.getRuntime().halt(99);
        return doc;
    }

    static Map<String, Object> eosRestart() throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Instance s = new Instance("s", true);
            stage = "restart";
            s.streams.start();
            Map<String, Long> expected = expectedCounts();
            try (OutputReader committed = new OutputReader("read_committed")) {
                committed.waitForCounts(expected);
                waitFor("running with every task", () -> s.runningWith(2 * PARTITIONS));
                doc.put("tasks", s.tasks());
                doc.put("expected", expected);
                doc.put("counts", committed.lastCounts());
                doc.put("outputs", committed.values);
                doc.put("output_records", committed.records);
            }
            finish(doc, admin, s);
        }
        return doc;
    }

    /** The end of an exactly-once scenario: the output as a read_uncommitted reader sees it
     *  (aborted records included), the input's committed offsets and ends, and the instance's
     *  state transitions and restores once it has closed. */
    static void finish(Map<String, Object> doc, Admin admin, Instance instance) throws Exception {
        try (OutputReader uncommitted = new OutputReader("read_uncommitted")) {
            uncommitted.readToEnd();
            doc.put("output_records_uncommitted", uncommitted.records);
        }
        doc.put("committed_input", committed(admin, input()));
        doc.put("input_ends", ends(admin, input()));
        stage = "close";
        instance.streams.close(Duration.ofSeconds(30));
        doc.put("transitions", instance.transitions);
        doc.put("restores", instance.restores);
    }

    static Map<String, Object> eosTakeover() throws Exception {
        Map<String, Object> doc = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            createTopics(admin);
            Instance a = new Instance("a", true);
            List<Map<String, Object>> stages = new ArrayList<>();
            stage = "a_alone";
            a.streams.start();
            waitFor("a running with every task", () -> a.runningWith(2 * PARTITIONS));

            stage = "both";
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "StreamsScenarios", "eos-member",
                    bootstrap, prefix, stateRoot.getPath()));
            Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BlockingQueue<String> fromB = new LinkedBlockingQueue<>();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream()))) {
                    for (String line; (line = r.readLine()) != null; ) fromB.add(line);
                } catch (Exception e) { /* the child is gone */ }
                fromB.add("exited");
            });
            reader.setDaemon(true);
            reader.start();
            try (Writer toB = new OutputStreamWriter(child.getOutputStream())) {
                String running = expect(fromB, "running ");
                List<String> bTasks = List.of(running.substring("running ".length()).split(","));
                waitFor("a and b sharing the tasks", () -> stable(() -> a.runningWith(2 * PARTITIONS - bTasks.size())));
                stages.add(Json.obj("stage", stage, "tasks", Json.obj("a", a.tasks(), "b", bTasks), "group", group(admin)));

                OutputReader committed = new OutputReader("read_committed");
                produceBatch(0);
                committed.waitForCounts(expectedCounts());

                stage = "b_killed";
                toB.write("arm\n");
                toB.flush();
                expect(fromB, "armed");
                produceBatch(1);
                doc.put("b_halted", expect(fromB, "halting ").substring("halting ".length()));
                if (!child.waitFor(WAIT_MS, TimeUnit.MILLISECONDS)) throw new IllegalStateException("b did not halt");
                doc.put("b_exit", child.exitValue());

                Map<String, Long> expected = expectedCounts();
                committed.waitForCounts(expected);
                waitFor("a running with every task", () -> a.runningWith(2 * PARTITIONS));
                stages.add(Json.obj("stage", stage, "tasks", Json.obj("a", a.tasks()), "group", group(admin)));
                doc.put("stages", stages);
                doc.put("expected", expected);
                doc.put("counts", committed.lastCounts());
                doc.put("outputs", committed.values);
                doc.put("output_records", committed.records);
                committed.close();
            }
            finish(doc, admin, a);
        }
        return doc;
    }

    /** The child JVM of eos-takeover: instance b, which says when it runs, arms its trigger when
     *  told, and halts once the first update after that is in the output, uncommitted. */
    static Map<String, Object> eosMember() throws Exception {
        Instance b = new Instance("b", true);
        stage = "both";
        b.streams.start();
        waitFor("b running with tasks", () -> stable(() -> b.streams.state() == KafkaStreams.State.RUNNING && !b.tasks().isEmpty()));
        say("running " + String.join(",", b.tasks()));
        String order = new BufferedReader(new InputStreamReader(System.in)).readLine();
        if (!"arm".equals(order)) throw new IllegalStateException("told " + order);
        armed = true;
        say("armed");
        List<Object> update = fired.get(WAIT_MS, TimeUnit.MILLISECONDS);
        try (OutputReader uncommitted = new OutputReader("read_uncommitted")) {
            uncommitted.waitFor("the open transaction's output",
                    () -> uncommitted.values.getOrDefault((String) update.get(0), List.of()).contains((Long) update.get(1)));
        }
        say("halting " + Json.json(Json.obj("word", update.get(0), "count", update.get(1), "tasks", b.tasks(),
                "transitions", b.transitions, "restores", b.restores)));
        Runtime.getRuntime().halt(99);
        return null;
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** The next line from the child that starts with ``start``. */
    static String expect(BlockingQueue<String> lines, String start) throws Exception {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (true) {
            String line = lines.poll(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS);
            if (line == null || line.equals("exited"))
                throw new IllegalStateException("b said no " + start.trim() + " (stage " + stage + ")" + (line == null ? "" : ": it exited"));
            if (line.startsWith(start)) return line;
        }
    }

    // ---- observing -----------------------------------------------------------------------------

    static void createTopics(Admin admin) throws Exception {
        admin.createTopics(List.of(new NewTopic(input(), PARTITIONS, (short) 1),
                new NewTopic(output(), PARTITIONS, (short) 1))).all().get();
        waitFor("the topics' leaders", () -> {
            try {
                return admin.describeTopics(List.of(input(), output())).allTopicNames().get().values().stream()
                        .allMatch(d -> d.partitions().size() == PARTITIONS && d.partitions().stream().allMatch(x -> x.leader() != null));
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** The output topic read from its start by a plain consumer: each word's values in order. */
    static class OutputReader implements AutoCloseable {
        final KafkaConsumer<String, Long> consumer;
        final Map<String, List<Long>> values = new TreeMap<>();
        int records = 0;

        OutputReader(String isolation) {
            consumer = new KafkaConsumer<>(props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation, ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 50),
                    new StringDeserializer(), new LongDeserializer());
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) tps.add(new TopicPartition(output(), p));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
        }

        void pollFor(Duration d) {
            long until = System.currentTimeMillis() + d.toMillis();
            do {
                for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(50))) {
                    values.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                    records++;
                }
            } while (System.currentTimeMillis() < until);
        }

        /** Reads on until the end offsets of now (the high watermark, or for read_committed the
         *  last stable offset). */
        void readToEnd() {
            Map<TopicPartition, Long> end = consumer.endOffsets(consumer.assignment());
            waitFor("the end of the output", () -> end.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue()));
        }

        Map<String, Long> lastCounts() {
            Map<String, Long> out = new TreeMap<>();
            values.forEach((w, l) -> out.put(w, l.get(l.size() - 1)));
            return out;
        }

        void waitFor(String what, BooleanSupplier cond) {
            StreamsScenarios.waitFor(what, () -> { pollFor(Duration.ZERO); return cond.getAsBoolean(); });
        }

        void waitForCounts(Map<String, Long> expected) {
            waitFor("the counts " + expected, () -> lastCounts().equals(expected));
        }

        public void close() { consumer.close(); }
    }

    /** Every record of ``topic`` from its start to its end offsets, per partition. */
    static <V> Map<Integer, List<ConsumerRecord<String, V>>> readAll(String topic, String isolation, Deserializer<V> values) {
        Map<Integer, List<ConsumerRecord<String, V>>> out = new TreeMap<>();
        try (KafkaConsumer<String, V> c = new KafkaConsumer<>(props(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation), new StringDeserializer(), values)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) tps.add(new TopicPartition(topic, p));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            waitFor("the end of " + topic, () -> {
                for (ConsumerRecord<String, V> r : c.poll(Duration.ofMillis(50)))
                    out.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r);
                return tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
            });
        }
        return out;
    }

    static Map<String, Long> ends(Admin admin, String topic) throws Exception {
        Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) ask.put(new TopicPartition(topic, p), OffsetSpec.latest());
        Map<String, Long> out = new TreeMap<>();
        admin.listOffsets(ask).all().get().forEach((tp, info) -> out.put(String.valueOf(tp.partition()), info.offset()));
        return out;
    }

    /** The application's consumer group as Admin describes it: state, type, assignor, and each
     *  member's partitions of the input and of the repartition topic (how many), sorted. */
    static Map<String, Object> group(Admin admin) throws Exception {
        if (PROTOCOL.equals("streams"))
            return streamsGroup(admin);
        ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(appId())).describedGroups().get(appId()).get();
        List<List<Long>> members = new ArrayList<>();
        for (MemberDescription m : g.members()) {
            Set<TopicPartition> held = m.assignment().topicPartitions();
            members.add(List.of(held.stream().filter(tp -> tp.topic().equals(input())).count(),
                    held.stream().filter(tp -> tp.topic().endsWith("-words-repartition")).count(), (long) held.size()));
        }
        members.sort(Comparator.comparing(Object::toString));
        return Json.obj("state", g.groupState().toString(), "type", g.type().toString(), "assignor", g.partitionAssignor(),
                "simple", g.isSimpleConsumerGroup(), "members", members);
    }

    /** The same of a streams group (StreamsGroupDescribe): each member's active tasks of the
     *  input's subtopology (0), of the repartition topic's (1), and its standby tasks. */
    static Map<String, Object> streamsGroup(Admin admin) throws Exception {
        StreamsGroupDescription g = admin.describeStreamsGroups(List.of(appId())).describedGroups().get(appId()).get();
        List<List<Long>> members = new ArrayList<>();
        for (StreamsGroupMemberDescription m : g.members()) {
            long[] active = new long[2];
            for (StreamsGroupMemberAssignment.TaskIds t : m.assignment().activeTasks())
                active[Integer.parseInt(t.subtopologyId())] += t.partitions().size();
            long standby = m.assignment().standbyTasks().stream().mapToLong(t -> t.partitions().size()).sum();
            members.add(List.of(active[0], active[1], standby));
        }
        members.sort(Comparator.comparing(Object::toString));
        return Json.obj("state", g.groupState().toString(), "type", "streams", "assignor", "sticky",
                "simple", false, "members", members);
    }

    /** The application's committed offsets of ``topic``, by partition. */
    static Map<String, Long> committed(Admin admin, String topic) throws Exception {
        Map<String, Long> out = new TreeMap<>();
        admin.listConsumerGroupOffsets(appId()).partitionsToOffsetAndMetadata().get().forEach((tp, om) -> {
            if (tp.topic().equals(topic)) out.put(String.valueOf(tp.partition()), om.offset());
        });
        return out;
    }

    /** Whether the repartition topic's records were all deleted (Streams' DeleteRecords up to its
     *  committed offsets) within the wait, and its start and end offsets then. */
    static Map<String, Object> waitPurged(Admin admin) throws Exception {
        String topic = appId() + "-words-repartition";
        Map<TopicPartition, OffsetSpec> earliest = new HashMap<>(), latest = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            earliest.put(new TopicPartition(topic, p), OffsetSpec.earliest());
            latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<String, Long> start = new TreeMap<>(), end = new TreeMap<>();
        boolean purged = false;
        long deadline = System.currentTimeMillis() + 15000;
        while (!purged && System.currentTimeMillis() < deadline) {
            admin.listOffsets(earliest).all().get().forEach((tp, i) -> start.put(String.valueOf(tp.partition()), i.offset()));
            admin.listOffsets(latest).all().get().forEach((tp, i) -> end.put(String.valueOf(tp.partition()), i.offset()));
            purged = start.equals(end);
            if (!purged) Thread.sleep(100);
        }
        return Json.obj("purged", purged, "start", start, "end", end);
    }

    /** The internal topics Streams created: partitions and the configs it set on them. */
    static Map<String, Object> internalTopics(Admin admin) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        List<String> names = admin.listTopics().names().get().stream().filter(n -> n.startsWith(appId() + "-")).sorted().toList();
        Map<String, TopicDescription> described = admin.describeTopics(names).allTopicNames().get();
        List<ConfigResource> resources = names.stream().map(n -> new ConfigResource(ConfigResource.Type.TOPIC, n)).toList();
        Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get();
        for (String name : names) {
            Map<String, String> set = new TreeMap<>();
            for (ConfigEntry e : configs.get(new ConfigResource(ConfigResource.Type.TOPIC, name)).entries())
                if (e.source() == ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG) set.put(e.name(), e.value());
            out.put(name.substring(appId().length() + 1), Json.obj("partitions", described.get(name).partitions().size(),
                    "internal", described.get(name).isInternal(), "configs", set));
        }
        return out;
    }

    // ---- helpers -----------------------------------------------------------------------------

    static Properties props(Object... kv) {
        Properties p = new Properties();
        for (int i = 0; i < kv.length; i += 2) p.put(kv[i], kv[i + 1]);
        return p;
    }

    static void waitFor(String what, BooleanSupplier cond) {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("timed out after " + WAIT_MS + " ms waiting for " + what + " (stage " + stage + ")");
            try { Thread.sleep(20); } catch (InterruptedException e) { throw new RuntimeException(e); }
        }
    }

    /** ``cond`` holds now and still holds 500 ms later (a follow-up rebalance would break it). */
    static boolean stable(BooleanSupplier cond) {
        if (!cond.getAsBoolean()) return false;
        try { Thread.sleep(500); } catch (InterruptedException e) { throw new RuntimeException(e); }
        return cond.getAsBoolean();
    }

}
