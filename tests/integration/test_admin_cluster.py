"""DescribeCluster, DescribeLogDirs and ElectLeaders as a single-node Kafka 4 answers them, with
kafka-python and confluent-kafka admin clients and raw requests for every version's edges."""

from __future__ import annotations

import os

import pytest

from tests.support.processes import import_client
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.integration.test_data_plane_hostile import create, produce
from tests.unit.topic_log.test_batches import batch
from tests.support.trio_client import TrioClient

ck = import_client("confluent_kafka")
import_client("kafka")
from confluent_kafka import ElectionType, TopicPartition  # noqa: E402
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402

E = ErrorCode
DescribeCluster, DescribeLogDirs, ElectLeaders = REQUESTS[ApiKey.DESCRIBE_CLUSTER].cls, REQUESTS[ApiKey.DESCRIBE_LOG_DIRS].cls, REQUESTS[ApiKey.ELECT_LEADERS].cls
NOT_ASKED = -2**31
CLUSTER_OPERATIONS = {"CREATE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS",
                      "ALTER_CONFIGS", "IDEMPOTENT_WRITE"}
NOT_NEEDED = "Leader election not needed for topic partition."


@pytest.fixture
def racked(start_broker):
    return start_broker({"broker.rack": "rack-a", "node.id": 3, "cluster.id": "c-41"})


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({})


def test_describe_cluster_with_both_clients(racked):
    kp = KafkaAdminClient(bootstrap_servers=racked.bootstrap)
    try:
        described = kp.describe_cluster()                         # DescribeCluster v2, operations asked
    finally:
        kp.close()
    assert described["cluster_id"] == "c-41" and described["controller_id"] == 3
    assert described["brokers"] == [{"broker_id": 3, "host": "127.0.0.1", "port": racked.port,
                                     "rack": "rack-a", "is_fenced": False}]
    assert set(described["authorized_operations"]) == CLUSTER_OPERATIONS
    admin = AdminClient({"bootstrap.servers": racked.bootstrap})
    plain = admin.describe_cluster().result(15)
    assert plain.cluster_id == "c-41" and plain.authorized_operations is None
    assert (plain.controller.id, plain.controller.rack) == (3, "rack-a")
    assert [(n.id, n.port, n.rack) for n in plain.nodes] == [(3, racked.port, "rack-a")]
    asked = admin.describe_cluster(include_authorized_operations=True).result(15)
    assert {op.name for op in asked.authorized_operations} == CLUSTER_OPERATIONS
    assert AclOperation.IDEMPOTENT_WRITE in asked.authorized_operations


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_describe_cluster_on_the_wire(broker, version):
    client = await TrioClient.connect(broker.port)
    answer = await client.call(ApiKey.DESCRIBE_CLUSTER, version, DescribeCluster(include_cluster_authorized_operations=False))
    assert (answer.error_code, answer.cluster_id, answer.controller_id) == (E.NONE, "groupbroker-local", 1)
    assert answer.cluster_authorized_operations == NOT_ASKED
    assert [(b.broker_id, b.port, b.rack) for b in answer.brokers] == [(1, broker.port, None)]
    fenced = {"include_fenced_brokers": True} if version >= 2 else {}
    asked = await client.call(ApiKey.DESCRIBE_CLUSTER, version, DescribeCluster(include_cluster_authorized_operations=True, **fenced))
    assert asked.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    assert [b.is_fenced for b in asked.brokers] == [False]


async def test_describe_cluster_endpoint_types(broker):
    client = await TrioClient.connect(broker.port)
    controller = await client.call(ApiKey.DESCRIBE_CLUSTER, 1, DescribeCluster(endpoint_type=2))
    assert (controller.error_code, controller.error_message, controller.brokers) == (
        E.MISMATCHED_ENDPOINT_TYPE, "The request was sent to an endpoint of type BROKER, but we wanted "
        "an endpoint of type CONTROLLER", ())
    unknown = await client.call(ApiKey.DESCRIBE_CLUSTER, 2, DescribeCluster(endpoint_type=7))
    assert (unknown.error_code, unknown.error_message) == (E.UNSUPPORTED_ENDPOINT_TYPE,
                                                           "Unsupported endpoint type 7")


def test_describe_log_dirs_with_kafka_python(racked):
    admin = AdminClient({"bootstrap.servers": racked.bootstrap})
    for future in admin.create_topics([NewTopic("orders", 2, 1), NewTopic("audit", 1, 1)]).values():
        future.result(15)
    producer = ck.Producer({"bootstrap.servers": racked.bootstrap})
    producer.produce("orders", b"x" * 500, partition=1)
    assert producer.flush(10) == 0
    kp = KafkaAdminClient(bootstrap_servers=racked.bootstrap)
    try:
        (everything,) = kp.describe_log_dirs()
        (some,) = kp.describe_log_dirs({"orders": [1, 5], "nope": [0]})
    finally:
        kp.close()
    assert everything["broker"] == 3
    (log_dir,) = everything["log_dirs"]
    data_dir = os.path.abspath(racked.data_dir)
    assert (log_dir["error_code"], log_dir["log_dir"]) == (E.NONE, data_dir)
    disk = os.statvfs(data_dir)
    assert log_dir["total_bytes"] == disk.f_blocks * disk.f_frsize
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
    sizes = {(t["name"], p["partition_index"]): (p["partition_size"], p["offset_lag"], p["is_future_key"])
             for t in log_dir["topics"] for p in t["partitions"]}
    written = os.path.getsize(os.path.join(data_dir, "orders-1", f"{0:020d}.log"))
    assert written > 500
    assert sizes == {("audit", 0): (0, 0, False), ("orders", 0): (0, 0, False),
                     ("orders", 1): (written, 0, False)}
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in some["log_dirs"][0]["topics"]] == [("orders", [1])]


@pytest.mark.parametrize("version", [1, 2, 3, 4])
async def test_describe_log_dirs_on_the_wire(broker, version, tmp_path):
    client = await TrioClient.connect(broker.port)
    await create(client, "t", 2)
    await produce(client, "t", 0, batch([b"abc"]))
    answer = await client.call(ApiKey.DESCRIBE_LOG_DIRS, version, DescribeLogDirs(topics=None))
    (result,) = answer.results
    assert result.log_dir == os.path.abspath(tmp_path)
    assert [(p.partition_index, p.partition_size > 0) for p in result.topics[0].partitions] == [
        (0, True), (1, False)]
    assert (result.total_bytes > 0) == (version >= 4)
    none = await client.call(ApiKey.DESCRIBE_LOG_DIRS, version, DescribeLogDirs(topics=()))
    assert none.results[0].topics == () and none.results[0].error_code == E.NONE


def test_elect_leaders_with_both_clients(racked):
    admin = AdminClient({"bootstrap.servers": racked.bootstrap})
    for future in admin.create_topics([NewTopic("orders", 2, 1)]).values():
        future.result(15)
    named = admin.elect_leaders(ElectionType.PREFERRED, [
        TopicPartition("orders", 0), TopicPartition("nope", 0), TopicPartition("orders", 4)]).result(15)
    assert {(tp.topic, tp.partition): (e.code(), e.str()) for tp, e in named.items()} == {
        ("orders", 0): (ck.KafkaError.ELECTION_NOT_NEEDED, NOT_NEEDED),
        ("nope", 0): (ck.KafkaError.UNKNOWN_TOPIC_OR_PART, "No such topic as nope"),
        ("orders", 4): (ck.KafkaError.UNKNOWN_TOPIC_OR_PART, "No such partition as orders-4")}
    assert admin.elect_leaders(ElectionType.UNCLEAN, None).result(15) == {}     # nothing to elect
    kp = KafkaAdminClient(bootstrap_servers=racked.bootstrap)
    try:
        answer = kp.elect_leaders(0, {"orders": [1]})              # ELECTION_NOT_NEEDED is no error
    finally:
        kp.close()
    (topic,) = answer.replica_election_results
    assert [(p.partition_id, p.error_code, p.error_message) for p in topic.partition_result] == [
        (1, E.ELECTION_NOT_NEEDED, NOT_NEEDED)]


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_elect_leaders_on_the_wire(broker, version):
    client = await TrioClient.connect(broker.port)
    await create(client, "t", 2)
    await create(client, "u", 1)
    everything = await client.call(ApiKey.ELECT_LEADERS, version, ElectLeaders(topic_partitions=None, timeout_ms=1000))
    assert [(r.topic, r.partition_result) for r in everything.replica_election_results] == [
        ("t", ()), ("u", ())]
    tp = ElectLeaders.TopicPartitions
    nothing = await client.call(ApiKey.ELECT_LEADERS, version, ElectLeaders(topic_partitions=(), timeout_ms=1000))
    assert nothing.replica_election_results == ()
    if version == 0:
        return                                          # v0 has no election type: always preferred
    bad = await client.call(ApiKey.ELECT_LEADERS, version, ElectLeaders(election_type=5, timeout_ms=1000,
                                                      topic_partitions=(tp(topic="t", partitions=(0,)),)))
    assert bad.error_code == E.INVALID_REQUEST
    assert [(p.partition_id, p.error_code, p.error_message) for p in bad.replica_election_results[0].partition_result] \
        == [(0, E.INVALID_REQUEST, "Unknown election type 5")]
