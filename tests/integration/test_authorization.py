"""Kafka's per-API authorization over real sockets: each API checks the operations Kafka
checks, the denied part of a request is answered with its authorization error beside the
allowed part, and what a principal may not describe is left out of listings. The actor is
User:ANONYMOUS on a PLAINTEXT listener; an administrator grants ACLs over SASL with a real
admin client."""

from __future__ import annotations

import time
import uuid

import pytest

from kafka_client.blocking import BlockingClient
from broker.testing.embedded import EmbeddedBroker
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import REQUESTS

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = EmbeddedBroker(tmp_path_factory.mktemp("data"), {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin"}).start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def admin(broker):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "sasl_plaintext",
                        "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"})


def grant(admin, resource: str, name: str, operation: str, principal: str = "User:ANONYMOUS") -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
    [future] = admin.create_acls([AclBinding(ResourceType[resource], name, ResourcePatternType.LITERAL, principal, "*",
                                             AclOperation[operation], AclPermissionType.ALLOW)]).values()
    future.result(10)


def make_topics(admin, *names) -> None:
    from confluent_kafka.admin import NewTopic
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(10)


def anonymous(broker) -> BlockingClient:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    client = BlockingClient(host, int(port), timeout=10)
    client.negotiate()
    return client


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:6]}"


def request(api: ApiKey, **fields):
    return REQUESTS[api].cls(**fields)


def test_offset_commit_answers_each_denied_topic_beside_the_allowed_ones(broker, admin):
    group, allowed, denied = unique("g"), unique("ok"), unique("no")
    make_topics(admin, allowed, denied)
    client = anonymous(broker)
    topic = REQUESTS[ApiKey.OFFSET_COMMIT].cls.OffsetCommitRequestTopic
    body = request(ApiKey.OFFSET_COMMIT, group_id=group, topics=tuple(
        topic(name=t, partitions=(topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=3),))
        for t in (allowed, denied)))
    answer = client.call(ApiKey.OFFSET_COMMIT, 8, body)
    assert {t.partitions[0].error_code for t in answer.topics} == {E.GROUP_AUTHORIZATION_FAILED}
    grant(admin, "GROUP", group, "READ")
    grant(admin, "TOPIC", allowed, "READ")
    answer = client.call(ApiKey.OFFSET_COMMIT, 8, body)
    assert {t.name: t.partitions[0].error_code for t in answer.topics} == {
        allowed: E.NONE, denied: E.TOPIC_AUTHORIZATION_FAILED}


def test_unknown_topic_ids_are_unknown_before_any_acl(broker, admin):
    """OffsetCommit v10, OffsetFetch v10, Produce v13 and Fetch v13+ name topics by id: an id
    the broker does not know is UNKNOWN_TOPIC_ID whatever the ACLs (Kafka checks it first); a
    known topic without the ACL is refused, and an OffsetCommit answers its refused topics first."""
    group, denied = unique("g"), unique("no")
    make_topics(admin, denied)
    grant(admin, "GROUP", group, "READ")
    grant(admin, "TOPIC", denied, "DESCRIBE")                # its id may be known; not READ, not WRITE
    client = anonymous(broker)
    meta = REQUESTS[ApiKey.METADATA].cls
    [described] = client.call(ApiKey.METADATA, 12, request(ApiKey.METADATA, topics=(
        meta.MetadataRequestTopic(name=denied),))).topics
    unknown = uuid.uuid4()
    topic = REQUESTS[ApiKey.OFFSET_COMMIT].cls.OffsetCommitRequestTopic
    part = topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=3)
    answer = client.call(ApiKey.OFFSET_COMMIT, 10, request(ApiKey.OFFSET_COMMIT, group_id=group, topics=(
        topic(topic_id=unknown, partitions=(part,)), topic(topic_id=described.topic_id, partitions=(part,)))))
    assert [(t.topic_id, t.partitions[0].error_code) for t in answer.topics] == [
        (described.topic_id, E.TOPIC_AUTHORIZATION_FAILED), (unknown, E.UNKNOWN_TOPIC_ID)]
    fetch = REQUESTS[ApiKey.OFFSET_FETCH].cls.OffsetFetchRequestGroup
    fetched = client.call(ApiKey.OFFSET_FETCH, 10, request(ApiKey.OFFSET_FETCH, groups=(fetch(group_id=group, topics=(
        fetch.OffsetFetchRequestTopics(topic_id=unknown, partition_indexes=(0,)),)),)))
    assert [(t.topic_id, t.partitions[0].error_code) for t in fetched.groups[0].topics] == [
        (unknown, E.UNKNOWN_TOPIC_ID)]
    data = REQUESTS[ApiKey.PRODUCE].cls.TopicProduceData
    records = data.PartitionProduceData(index=0, records=b"not read")
    produced = client.call(ApiKey.PRODUCE, 13, request(ApiKey.PRODUCE, acks=1, timeout_ms=1000, topic_data=(
        data(topic_id=unknown, partition_data=(records,)),
        data(topic_id=described.topic_id, partition_data=(records,)))))
    assert [(t.topic_id, t.partition_responses[0].error_code) for t in produced.responses] == [
        (unknown, E.UNKNOWN_TOPIC_ID), (described.topic_id, E.TOPIC_AUTHORIZATION_FAILED)]
    fetch = REQUESTS[ApiKey.FETCH].cls
    asked = fetch.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024)
    read = client.call(ApiKey.FETCH, 18, request(ApiKey.FETCH, max_wait_ms=0, min_bytes=0, topics=(
        fetch.FetchTopic(topic_id=unknown, partitions=(asked,)),
        fetch.FetchTopic(topic_id=described.topic_id, partitions=(asked,)))))
    assert [(t.topic_id, t.partitions[0].error_code) for t in read.responses] == [
        (unknown, E.UNKNOWN_TOPIC_ID), (described.topic_id, E.TOPIC_AUTHORIZATION_FAILED)]


def test_find_coordinator_list_and_describe_groups_see_only_describable_groups(broker, admin):
    mine, theirs = unique("mine"), unique("theirs")
    grant(admin, "GROUP", mine, "DESCRIBE")
    client = anonymous(broker)
    answer = client.call(ApiKey.FIND_COORDINATOR, 4, request(ApiKey.FIND_COORDINATOR, key_type=0,
                                                            coordinator_keys=(mine, theirs)))
    assert {c.key: c.error_code for c in answer.coordinators} == {mine: E.NONE, theirs: E.GROUP_AUTHORIZATION_FAILED}
    for group in (mine, theirs):          # both exist: the admin committed for them
        from confluent_kafka import Consumer, TopicPartition
        topic = unique("t")
        make_topics(admin, topic)
        consumer = Consumer({**admin_settings(broker), "group.id": group})
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        consumer.close()
    listed = client.call(ApiKey.LIST_GROUPS, 4, request(ApiKey.LIST_GROUPS))
    names = {g.group_id for g in listed.groups}
    assert mine in names and theirs not in names
    described = client.call(ApiKey.DESCRIBE_GROUPS, 5, request(ApiKey.DESCRIBE_GROUPS, groups=(mine, theirs),
                                                               include_authorized_operations=True))
    by_id = {g.group_id: g for g in described.groups}
    assert by_id[theirs].error_code == E.GROUP_AUTHORIZATION_FAILED
    assert by_id[mine].error_code == E.NONE and by_id[mine].authorized_operations == 1 << 8   # DESCRIBE


def admin_settings(broker) -> dict:
    return {"bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "PLAIN", "sasl.username": "admin", "sasl.password": "admin-secret"}


def test_producing_needs_write_and_an_idempotent_producer_write_on_some_topic(broker, admin):
    import confluent_kafka
    topic = unique("w")
    make_topics(admin, topic)
    client = anonymous(broker)
    refused = client.call(ApiKey.INIT_PRODUCER_ID, 4, request(ApiKey.INIT_PRODUCER_ID, transactional_id=None,
                                                             transaction_timeout_ms=60000))
    assert refused.error_code == E.CLUSTER_AUTHORIZATION_FAILED
    reports = []
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": False})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    assert reports[0].code() == confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    grant(admin, "TOPIC", topic, "WRITE")
    allowed = client.call(ApiKey.INIT_PRODUCER_ID, 4, request(ApiKey.INIT_PRODUCER_ID, transactional_id=None,
                                                             transaction_timeout_ms=60000))
    assert allowed.error_code == E.NONE and allowed.producer_id >= 0
    reports.clear()
    producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": False})
    producer.produce(topic, b"y", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(10)
    assert reports == [None]


def test_broker_configs_need_describe_configs_on_the_cluster(broker, admin):
    topic = unique("c")
    make_topics(admin, topic)
    grant(admin, "TOPIC", topic, "DESCRIBE_CONFIGS")
    resource = REQUESTS[ApiKey.DESCRIBE_CONFIGS].cls.DescribeConfigsResource
    answer = anonymous(broker).call(ApiKey.DESCRIBE_CONFIGS, 4, request(ApiKey.DESCRIBE_CONFIGS, resources=(
        resource(resource_type=2, resource_name=topic, configuration_keys=None),
        resource(resource_type=4, resource_name="", configuration_keys=None))))
    by_type = {r.resource_type: r for r in answer.results}
    assert by_type[2].error_code == E.NONE and by_type[2].configs
    assert (by_type[4].error_code, by_type[4].configs) == (E.CLUSTER_AUTHORIZATION_FAILED, ())


def test_revoke_acls_fault_removes_a_principals_grants(broker, admin):
    group = unique("revoked")
    grant(admin, "GROUP", group, "DESCRIBE")
    client = anonymous(broker)
    find = request(ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=(group,))
    assert client.call(ApiKey.FIND_COORDINATOR, 4, find).coordinators[0].error_code == E.NONE
    assert broker.faults.revoke_acls(principal="User:ANONYMOUS", resource_type="group", name=group) == \
        "revoked 1 ACL(s) of User:ANONYMOUS"
    assert client.call(ApiKey.FIND_COORDINATOR, 4, find).coordinators[0].error_code == E.GROUP_AUTHORIZATION_FAILED


def test_without_an_authorizer_acl_apis_answer_security_disabled(tmp_path):
    plain = EmbeddedBroker(tmp_path, {}).start()
    try:
        creation = REQUESTS[ApiKey.CREATE_ACLS].cls.AclCreation(
            resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a", host="*",
            operation=3, permission_type=3)
        answer = anonymous(plain).call(ApiKey.CREATE_ACLS, 3, request(ApiKey.CREATE_ACLS, creations=(creation,)))
        assert (answer.results[0].error_code, answer.results[0].error_message) == (
            E.SECURITY_DISABLED, "No Authorizer is configured.")
    finally:
        plain.stop()


def test_metadata_auto_creates_a_topic_only_with_create(broker, admin):
    missing = unique("auto")
    grant(admin, "TOPIC", missing, "DESCRIBE")
    client = anonymous(broker)
    topic = REQUESTS[ApiKey.METADATA].cls.MetadataRequestTopic
    ask = request(ApiKey.METADATA, topics=(topic(name=missing),), allow_auto_topic_creation=True)
    [refused] = client.call(ApiKey.METADATA, 12, ask).topics
    assert refused.error_code == E.TOPIC_AUTHORIZATION_FAILED
    grant(admin, "TOPIC", missing, "CREATE")
    [created] = client.call(ApiKey.METADATA, 12, ask).topics
    # Kafka answers the request that creates a topic as it answers one for an unknown topic
    assert created.error_code in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION) and created.name == missing
    [described] = client.call(ApiKey.METADATA, 12, ask).topics
    assert described.error_code == E.NONE


def test_delete_topics_checks_describe_then_delete(broker, admin):
    import confluent_kafka
    deletable, kept, unknown = unique("del"), unique("kept"), unique("unknown")
    make_topics(admin, deletable, kept)
    grant(admin, "TOPIC", deletable, "DELETE")
    grant(admin, "TOPIC", kept, "DESCRIBE")
    grant(admin, "TOPIC", unknown, "DESCRIBE")
    anonymous_admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    results = {}
    for name, future in anonymous_admin.delete_topics([deletable, kept, unknown, unique("hidden")]).items():
        try:
            future.result(10)
            results[name] = "NONE"
        except confluent_kafka.KafkaException as e:
            results[name] = e.args[0].name()
    assert sorted(results.values()) == ["NONE", "TOPIC_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
                                        "UNKNOWN_TOPIC_OR_PART"]
    assert (results[deletable], results[kept], results[unknown]) == (
        "NONE", "TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PART")


def test_write_txn_markers_needs_alter_or_cluster_action_on_the_cluster(broker, admin):
    """Kafka's check: ALTER on the cluster, else CLUSTER_ACTION; refused, every partition of every
    marker is CLUSTER_AUTHORIZATION_FAILED and nothing is written."""
    topic = unique("markers")
    make_topics(admin, topic)
    marker = REQUESTS[ApiKey.WRITE_TXN_MARKERS].cls.WritableTxnMarker
    named = marker.WritableTxnMarkerTopic
    body = request(ApiKey.WRITE_TXN_MARKERS, markers=(
        marker(producer_id=7, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
               topics=(named(name=topic, partition_indexes=(0,)),)),
        marker(producer_id=8, producer_epoch=0, transaction_result=True, coordinator_epoch=0,
               topics=(named(name=topic, partition_indexes=(0, 3)),))))
    client = anonymous(broker)

    def errors() -> dict:
        answer = client.call(ApiKey.WRITE_TXN_MARKERS, 1, body)
        return {(m.producer_id, p.partition_index): p.error_code
                for m in answer.markers for t in m.topics for p in t.partitions}
    assert errors() == dict.fromkeys([(7, 0), (8, 0), (8, 3)], E.CLUSTER_AUTHORIZATION_FAILED)
    for operation in ("CLUSTER_ACTION", "ALTER"):
        grant(admin, "BROKER", "kafka-cluster", operation)
        assert errors() == {(7, 0): E.NONE, (8, 0): E.NONE, (8, 3): E.UNKNOWN_TOPIC_OR_PARTITION}
        broker.faults.revoke_acls(principal="User:ANONYMOUS", resource_type="cluster")
    assert errors() == dict.fromkeys([(7, 0), (8, 0), (8, 3)], E.CLUSTER_AUTHORIZATION_FAILED)


def test_a_streams_group_creates_only_the_internal_topics_its_member_may_create(broker, admin):
    """KIP-1071: the internal topics a streams group's coordinator asks for are created with the
    heartbeat's principal, as Kafka's broker creates them: without CREATE none is, and the
    heartbeat's MISSING_INTERNAL_TOPICS status says which were refused; with CREATE on the
    cluster they are created and the group's tasks assigned."""
    group, source = unique("app"), unique("lines")
    changelog, repartition = f"{group}-counts-changelog", f"{group}-words-repartition"
    make_topics(admin, source)
    grant(admin, "GROUP", group, "READ")
    for topic in (source, changelog, repartition):
        grant(admin, "TOPIC", topic, "DESCRIBE")
    heartbeat = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls
    sub = heartbeat.Topology.Subtopology
    info = sub.TopicInfo
    topology = heartbeat.Topology(epoch=0, subtopologies=(
        sub(subtopology_id="0", source_topics=(source,), source_topic_regex=(), state_changelog_topics=(),
            repartition_sink_topics=(repartition,), repartition_source_topics=(), copartition_groups=()),
        sub(subtopology_id="1", source_topics=(), source_topic_regex=(), repartition_sink_topics=(),
            repartition_source_topics=(info(name=repartition, partitions=0, replication_factor=0, topic_configs=()),),
            state_changelog_topics=(info(name=changelog, partitions=0, replication_factor=0, topic_configs=()),),
            copartition_groups=())))
    client = anonymous(broker)

    def beat(epoch: int):
        return client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, heartbeat(
            group_id=group, member_id="m1", member_epoch=epoch, endpoint_information_epoch=-1,
            rebalance_timeout_ms=30000 if epoch == 0 else -1, topology=topology if epoch == 0 else None,
            active_tasks=(), standby_tasks=(), warmup_tasks=(), process_id="p1" if epoch == 0 else None))
    answer = beat(0)
    [status] = [s for s in answer.status if s.status_code == 3]        # (beside the initial rebalance delay's)
    assert status.status_detail.startswith("Internal topics are missing: "), answer
    order = sorted((changelog, repartition), key=status.status_detail.index)     # as the status names them
    assert status.status_detail.endswith(f"; Unauthorized to CREATE on topics {', '.join(order)}."), answer
    metadata = REQUESTS[ApiKey.METADATA].cls
    shown = client.call(ApiKey.METADATA, 12, metadata(topics=(metadata.MetadataRequestTopic(name=changelog),),
                                                      allow_auto_topic_creation=False))
    assert shown.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION, shown
    grant(admin, "BROKER", "kafka-cluster", "CREATE")         # confluent-kafka names the cluster resource BROKER
    epoch = answer.member_epoch
    for _ in range(150):                           # after the initial rebalance delay (3 s)
        answer = beat(epoch)
        assert answer.error_code == E.NONE, answer
        epoch = answer.member_epoch
        if answer.active_tasks:
            break
        time.sleep(0.1)
    assert sorted(t.subtopology_id for t in answer.active_tasks) == ["0", "1"], answer
    client.close()
