// Scenario 6: the Admin client's group, topic, config, record and transaction operations.

import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;

class AdminScenario {

    /** {@code base}: the first record's timestamp, the same for both brokers' runs and recent
     *  enough that no retention check deletes the records while the scenario reads them. */
    static Object run(long base) throws Exception {
        String p = JavaScenarios.prefix;
        String topicA = p + "-a", topicB = p + "-b";
        String classic = p + "-classic", consumerGroup = p + "-consumer", empty = p + "-empty";
        Map<String, Object> r = new LinkedHashMap<>();
        List<JavaScenarios.Member> members = new ArrayList<>();
        List<KafkaProducer<String, String>> producers = new ArrayList<>();
        try (Admin admin = JavaScenarios.admin()) {
            // topics
            r.put("create", JavaScenarios.attempt(() -> {
                CreateTopicsResult res = admin.createTopics(List.of(
                        new NewTopic(topicA, 3, (short) 1),
                        new NewTopic(topicB, 2, (short) 1).configs(Map.of("cleanup.policy", "compact", "retention.ms", "3600000"))));
                res.all().get();
                return List.of(res.numPartitions(topicA).get(), res.numPartitions(topicB).get(),
                               res.replicationFactor(topicB).get(), config(res.config(topicB).get(), "cleanup.policy"));
            }));
            JavaScenarios.createTopic(admin, p + "-ready", 1);          // waits until Metadata knows the topics
            JavaScenarios.waitFor("topics known", 15000, () -> describe(admin, topicA) instanceof Map<?, ?> m && m.containsKey("ok"));
            r.put("create_again", JavaScenarios.attempt(() -> admin.createTopics(List.of(new NewTopic(topicA, 3, (short) 1))).all().get()));
            r.put("create_invalid", JavaScenarios.attempt(() -> admin.createTopics(List.of(new NewTopic(p + "-bad", 0, (short) 1))).all().get()));
            r.put("describe_a", describe(admin, topicA));
            r.put("create_partitions", JavaScenarios.attempt(() -> admin.createPartitions(Map.of(topicA, NewPartitions.increaseTo(5))).all().get()));
            JavaScenarios.waitFor("5 partitions", 15000, () -> describe(admin, topicA).toString().contains("partitions=5"));
            r.put("describe_a_grown", describe(admin, topicA));
            r.put("create_partitions_fewer", JavaScenarios.attempt(() -> admin.createPartitions(Map.of(topicA, NewPartitions.increaseTo(4))).all().get()));
            r.put("create_partitions_unknown", JavaScenarios.attempt(() -> admin.createPartitions(Map.of(p + "-nope", NewPartitions.increaseTo(4))).all().get()));
            r.put("list_topics", JavaScenarios.attempt(() -> {
                List<String> names = new ArrayList<>();
                for (String n : admin.listTopics().names().get()) if (n.startsWith(p)) names.add(n);
                Collections.sort(names);
                return names;
            }));

            // cluster
            r.put("cluster", JavaScenarios.attempt(() -> {
                DescribeClusterResult c = admin.describeCluster();
                List<Object> nodes = new ArrayList<>();
                for (Node n : c.nodes().get()) nodes.add(Json.obj("id", n.id(), "rack", n.rack()));
                return Json.obj("nodes", nodes, "controller", c.controller().get().id(),
                                         "cluster_id", c.clusterId().get());
            }));

            // configs
            ConfigResource resA = new ConfigResource(ConfigResource.Type.TOPIC, topicA);
            ConfigResource resB = new ConfigResource(ConfigResource.Type.TOPIC, topicB);
            r.put("configs_b", configs(admin, resB));
            r.put("alter_configs", JavaScenarios.attempt(() -> admin.incrementalAlterConfigs(Map.of(resA, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "12345"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                    .all().get()));
            r.put("configs_a_altered", configs(admin, resA));
            r.put("alter_configs_delete", JavaScenarios.attempt(() -> admin.incrementalAlterConfigs(Map.of(resA, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE))))
                    .all().get()));
            r.put("configs_a_deleted", configs(admin, resA));
            r.put("alter_configs_invalid", JavaScenarios.attempt(() -> admin.incrementalAlterConfigs(Map.of(resA, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET))))
                    .all().get()));
            r.put("alter_configs_unknown_topic", JavaScenarios.attempt(() -> admin.incrementalAlterConfigs(Map.of(
                    new ConfigResource(ConfigResource.Type.TOPIC, p + "-nope"), List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET)))).all().get()));

            // records: 10 in partition 0 of A, the first 4 deleted
            try (KafkaProducer<String, String> prod = JavaScenarios.producer(Map.of())) {
                for (int i = 0; i < 10; i++) prod.send(new ProducerRecord<>(topicA, 0, base + i, "k", "v" + i));
                prod.flush();
            }
            TopicPartition a0 = new TopicPartition(topicA, 0);
            r.put("list_offsets", listOffsets(admin, a0, base));
            r.put("delete_records", JavaScenarios.attempt(() ->
                    admin.deleteRecords(Map.of(a0, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(a0).get().lowWatermark()));
            r.put("delete_records_beyond", JavaScenarios.attempt(() ->
                    admin.deleteRecords(Map.of(a0, RecordsToDelete.beforeOffset(99))).lowWatermarks().get(a0).get().lowWatermark()));
            r.put("list_offsets_after_delete", listOffsets(admin, a0, base));

            // groups: a classic group with a member, a consumer group with a member, an empty one
            try (KafkaConsumer<String, String> c = JavaScenarios.consumer(Map.of(ConsumerConfig.GROUP_ID_CONFIG, empty))) {
                c.assign(List.of(a0, new TopicPartition(topicA, 1)));
                c.commitSync(Map.of(a0, new OffsetAndMetadata(7, "seven"), new TopicPartition(topicA, 1), new OffsetAndMetadata(0)));
            }
            JavaScenarios.Member classicMember = new JavaScenarios.Member("classic-1", topicA, JavaScenarios.groupProps(
                    classic, "classic", "RangeAssignor", Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1"))).start();
            JavaScenarios.Member consumerMember = new JavaScenarios.Member("consumer-1", topicA, JavaScenarios.groupProps(
                    consumerGroup, "consumer", null, Map.of())).start();
            members.add(classicMember);
            members.add(consumerMember);
            JavaScenarios.stage("classic member", List.of(classicMember), 5, true);
            JavaScenarios.stage("consumer member", List.of(consumerMember), 5, true);
            JavaScenarios.waitFor("the consumer member's commit", 30000, () -> {
                try {
                    return ((Map<?, ?>) JavaScenarios.committed(admin, consumerGroup)).size() > 0
                            && ((Map<?, ?>) JavaScenarios.committed(admin, classic)).size() > 0;
                } catch (Exception e) {
                    return false;
                }
            });
            List<String> ours = List.of(classic, consumerGroup, empty);
            r.put("list_groups", listGroups(admin, ListGroupsOptions.forConsumerGroups(), p));
            r.put("list_groups_classic", listGroups(admin, ListGroupsOptions.forConsumerGroups().withTypes(Set.of(GroupType.CLASSIC)), p));
            r.put("list_groups_consumer", listGroups(admin, ListGroupsOptions.forConsumerGroups().withTypes(Set.of(GroupType.CONSUMER)), p));
            r.put("list_groups_stable", listGroups(admin, ListGroupsOptions.forConsumerGroups().inGroupStates(Set.of(GroupState.STABLE)), p));
            r.put("list_groups_empty", listGroups(admin, ListGroupsOptions.forConsumerGroups().inGroupStates(Set.of(GroupState.EMPTY)), p));
            r.put("list_groups_all_types", listGroups(admin, new ListGroupsOptions(), p));
            Map<String, Object> described = new TreeMap<>();
            for (String g : ours) described.put(g, JavaScenarios.attempt(() -> JavaScenarios.describeGroup(admin, g)));
            described.put(p + "-unknown", JavaScenarios.attempt(() -> JavaScenarios.describeGroup(admin, p + "-unknown")));
            r.put("describe_groups", described);

            // offsets
            r.put("list_group_offsets_empty", JavaScenarios.attempt(() -> JavaScenarios.committed(admin, empty)));
            r.put("list_group_offsets_metadata", JavaScenarios.attempt(() ->
                    admin.listConsumerGroupOffsets(empty).partitionsToOffsetAndMetadata().get().get(a0).metadata()));
            r.put("alter_offsets_empty", JavaScenarios.attempt(() -> admin.alterConsumerGroupOffsets(empty,
                    Map.of(a0, new OffsetAndMetadata(2), new TopicPartition(topicA, 2), new OffsetAndMetadata(5))).all().get()));
            r.put("list_group_offsets_altered", JavaScenarios.attempt(() -> JavaScenarios.committed(admin, empty)));
            r.put("alter_offsets_active", JavaScenarios.attempt(() -> admin.alterConsumerGroupOffsets(classic,
                    Map.of(a0, new OffsetAndMetadata(1))).all().get()));
            r.put("alter_offsets_active_consumer", JavaScenarios.attempt(() -> admin.alterConsumerGroupOffsets(consumerGroup,
                    Map.of(a0, new OffsetAndMetadata(1))).all().get()));
            r.put("delete_offsets_empty", JavaScenarios.attempt(() -> admin.deleteConsumerGroupOffsets(empty, Set.of(a0)).all().get()));
            r.put("list_group_offsets_deleted", JavaScenarios.attempt(() -> JavaScenarios.committed(admin, empty)));
            r.put("delete_offsets_subscribed", JavaScenarios.attempt(() -> admin.deleteConsumerGroupOffsets(classic, Set.of(a0)).all().get()));
            r.put("delete_offsets_subscribed_consumer", JavaScenarios.attempt(() -> admin.deleteConsumerGroupOffsets(consumerGroup, Set.of(a0)).all().get()));
            r.put("delete_groups_active", JavaScenarios.attempt(() -> admin.deleteConsumerGroups(List.of(classic)).all().get()));

            // members removed by an admin
            r.put("remove_unknown_member", JavaScenarios.attempt(() -> admin.removeMembersFromConsumerGroup(classic,
                    new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("static-nobody")))).all().get()));
            r.put("remove_static_member", JavaScenarios.attempt(() -> admin.removeMembersFromConsumerGroup(classic,
                    new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("static-1")))).all().get()));
            r.put("remove_all_consumer", JavaScenarios.attempt(() -> admin.removeMembersFromConsumerGroup(consumerGroup,
                    new RemoveMembersFromConsumerGroupOptions()).all().get()));
            for (JavaScenarios.Member m : members) m.close();
            JavaScenarios.waitFor("both groups empty", 30000, () -> {
                try {
                    for (ConsumerGroupDescription d : admin.describeConsumerGroups(List.of(classic, consumerGroup)).all().get().values())
                        if (d.groupState() != GroupState.EMPTY) return false;
                    return true;
                } catch (Exception e) {
                    return false;
                }
            });
            r.put("list_groups_after", listGroups(admin, ListGroupsOptions.forConsumerGroups(), p));
            r.put("delete_groups", JavaScenarios.attempt(() -> {
                DeleteConsumerGroupsResult res = admin.deleteConsumerGroups(List.of(classic, empty, p + "-unknown"));
                Map<String, Object> each = new TreeMap<>();
                for (Map.Entry<String, KafkaFuture<Void>> e : res.deletedGroups().entrySet())
                    each.put(e.getKey(), JavaScenarios.attempt(() -> e.getValue().get()));
                return each;
            }));
            r.put("list_groups_deleted", listGroups(admin, ListGroupsOptions.forConsumerGroups(), p));

            // transactions: one open, one committed
            KafkaProducer<String, String> open = JavaScenarios.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, p + "-tx-open",
                    ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 50000));
            producers.add(open);
            open.initTransactions();
            open.beginTransaction();
            open.send(new ProducerRecord<>(topicA, 1, "t", "open")).get();
            KafkaProducer<String, String> done = JavaScenarios.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, p + "-tx-done"));
            producers.add(done);
            done.initTransactions();
            done.beginTransaction();
            done.send(new ProducerRecord<>(topicA, 2, "t", "done")).get();
            done.commitTransaction();
            // Kafka answers EndTxn before its markers are written, groupbroker after
            // (docs/kafka-differences.md): wait until the commit is complete on either
            JavaScenarios.waitFor("the commit to complete", 10000, () -> {
                try {
                    return admin.describeTransactions(List.of(p + "-tx-done")).all().get()
                            .get(p + "-tx-done").state() == TransactionState.COMPLETE_COMMIT;
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            r.put("list_transactions", JavaScenarios.attempt(() -> {
                Map<String, Object> out = new TreeMap<>();
                for (TransactionListing t : admin.listTransactions().all().get())
                    if (t.transactionalId().startsWith(p)) out.put(t.transactionalId(), t.state());
                return out;
            }));
            r.put("list_transactions_ongoing", JavaScenarios.attempt(() -> {
                List<String> out = new ArrayList<>();
                for (TransactionListing t : admin.listTransactions(new ListTransactionsOptions().filterStates(
                        List.of(TransactionState.ONGOING))).all().get())
                    if (t.transactionalId().startsWith(p)) out.add(t.transactionalId());
                return out;
            }));
            r.put("describe_transactions", JavaScenarios.attempt(() -> {
                Map<String, Object> out = new TreeMap<>();
                for (Map.Entry<String, TransactionDescription> e : admin.describeTransactions(
                        List.of(p + "-tx-open", p + "-tx-done")).all().get().entrySet()) {
                    TransactionDescription d = e.getValue();
                    List<String> tps = new ArrayList<>();
                    for (TopicPartition tp : d.topicPartitions()) tps.add(tp.toString());
                    Collections.sort(tps);
                    out.put(e.getKey(), Json.obj("state", d.state(), "epoch", d.producerEpoch(),
                            "timeout_ms", d.transactionTimeoutMs(), "started", d.transactionStartTimeMs().isPresent(),
                            "partitions", tps, "coordinator_id", d.coordinatorId(), "producer_id", d.producerId()));
                }
                return out;
            }));
            r.put("describe_transactions_unknown", JavaScenarios.attempt(() -> admin.describeTransactions(List.of(p + "-tx-nope")).all().get()));
            open.abortTransaction();

            // topics deleted
            r.put("delete_topics", JavaScenarios.attempt(() -> admin.deleteTopics(List.of(topicB)).all().get()));
            JavaScenarios.waitFor("topic B gone", 15000, () -> describe(admin, topicB).toString().contains("UnknownTopicOrPartition"));
            r.put("describe_deleted", describe(admin, topicB));
            r.put("delete_topics_unknown", JavaScenarios.attempt(() -> admin.deleteTopics(List.of(p + "-nope")).all().get()));
        } finally {
            for (JavaScenarios.Member m : members) m.stop = true;
            for (KafkaProducer<String, String> prod : producers) prod.close(Duration.ofSeconds(5));
        }
        return r;
    }

    static Object config(Config c, String name) {
        ConfigEntry e = c.get(name);
        return e == null ? null : Json.obj("value", e.value(), "source", e.source(), "read_only", e.isReadOnly(),
                                                    "sensitive", e.isSensitive(), "default", e.isDefault());
    }

    /** The topic configs applications look at (a broker may have configs the other has not). */
    static final List<String> TOPIC_CONFIGS = List.of("cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes",
            "min.insync.replicas", "max.message.bytes", "message.timestamp.type", "compression.type");

    static Object configs(Admin admin, ConfigResource res) {
        return JavaScenarios.attempt(() -> {
            Config c = admin.describeConfigs(List.of(res)).all().get().get(res);
            Map<String, Object> out = new TreeMap<>();
            for (String name : TOPIC_CONFIGS) out.put(name, config(c, name));
            return out;
        });
    }

    static Object describe(Admin admin, String topic) {
        return JavaScenarios.attempt(() -> {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            List<Object> partitions = new ArrayList<>();
            for (TopicPartitionInfo i : d.partitions()) {
                List<Integer> replicas = new ArrayList<>(), isr = new ArrayList<>();
                for (Node n : i.replicas()) replicas.add(n.id());
                for (Node n : i.isr()) isr.add(n.id());
                partitions.add(Json.obj("partition", i.partition(), "leader", i.leader() == null ? null : i.leader().id(),
                                                 "replicas", replicas, "isr", isr));
            }
            return Json.obj("name", d.name(), "internal", d.isInternal(), "partitions=" + partitions.size(), partitions,
                                     "topic_id", d.topicId().toString());
        });
    }

    static Object listOffsets(Admin admin, TopicPartition tp, long base) {
        Map<String, Object> out = new LinkedHashMap<>();
        Map<String, OffsetSpec> specs = new LinkedHashMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        specs.put("latest", OffsetSpec.latest());
        specs.put("max_timestamp", OffsetSpec.maxTimestamp());
        specs.put("at_base_plus_5", OffsetSpec.forTimestamp(base + 5));
        specs.put("after_all", OffsetSpec.forTimestamp(99999999999999L));
        for (Map.Entry<String, OffsetSpec> e : specs.entrySet())
            out.put(e.getKey(), JavaScenarios.attempt(() -> {
                ListOffsetsResult.ListOffsetsResultInfo i = admin.listOffsets(Map.of(tp, e.getValue())).partitionResult(tp).get();
                return Json.obj("offset", i.offset(), "timestamp", i.timestamp(), "leader_epoch", i.leaderEpoch());
            }));
        return out;
    }

    static Object listGroups(Admin admin, ListGroupsOptions options, String prefix) {
        return JavaScenarios.attempt(() -> {
            Map<String, Object> out = new TreeMap<>();
            for (GroupListing g : admin.listGroups(options).all().get())
                if (g.groupId().startsWith(prefix))
                    out.put(g.groupId(), Json.obj("type", g.type(), "protocol", g.protocol(), "state", g.groupState(),
                                                           "simple", g.isSimpleConsumerGroup()));
            return out;
        });
    }
}
