"""CreatePartitions and DeleteRecords as Kafka 4 answers them, over real sockets: real admin
clients (kafka-python, confluent-kafka), raw requests for the edges, restarts and crashes."""

from __future__ import annotations

import os

import pytest

from topic_log import TopicStore
from tests.support.processes import import_client, wait_until
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.integration.test_data_plane_hostile import create, fetch, produce
from tests.unit.topic_log.test_batches import batch, values_of
from tests.support.trio_client import TrioClient

ck = import_client("confluent_kafka")
kafka = import_client("kafka")
from confluent_kafka import TopicPartition as CkPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402
from kafka.admin import KafkaAdminClient  # noqa: E402
from kafka.structs import TopicPartition  # noqa: E402

E = ErrorCode
CreatePartitions, DeleteRecords = REQUESTS[ApiKey.CREATE_PARTITIONS].cls, REQUESTS[ApiKey.DELETE_RECORDS].cls
ListOffsets, Metadata = REQUESTS[ApiKey.LIST_OFFSETS].cls, REQUESTS[ApiKey.METADATA].cls


def confluent_admin(bootstrap: str) -> AdminClient:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("orders", 2, 1)], operation_timeout=10).values():
        future.result(15)
    return admin


def outcome(future) -> str | None:
    """A confluent-kafka admin future's error as 'NAME: message', or None on success."""
    try:
        future.result(15)
    except ck.KafkaException as e:
        return f"{e.args[0].name()}: {e.args[0].str()}"
    return None


def partition_count(admin: AdminClient, topic: str) -> int:
    return len(admin.list_topics(topic, timeout=10).topics[topic].partitions)


# --- CreatePartitions ----------------------------------------------------------------------------

def test_create_partitions_with_confluent_kafka_and_kafkas_errors(broker):
    admin = confluent_admin(broker.bootstrap)
    checks = admin.create_partitions([NewPartitions("orders", 6)], validate_only=True)
    assert outcome(checks["orders"]) is None
    assert partition_count(admin, "orders") == 2                    # validate_only changes nothing
    assert outcome(admin.create_partitions([NewPartitions("orders", 5)])["orders"]) is None
    assert partition_count(admin, "orders") == 5                    # at once, no waiting
    answers = admin.create_partitions([NewPartitions("orders", 3), NewPartitions("missing", 4)])
    assert outcome(answers["orders"]) == ("INVALID_PARTITIONS: The topic orders currently has 5 "
                                          "partition(s); 3 would not be an increase.")
    assert outcome(answers["missing"]).startswith("UNKNOWN_TOPIC_OR_PART: ")   # no message: client's
    assert outcome(admin.create_partitions([NewPartitions("orders", 5)])["orders"]) == \
        "INVALID_PARTITIONS: Topic already has 5 partition(s)."
    wrong = admin.create_partitions([NewPartitions("orders", 7, replica_assignment=[[1], [2]])])
    assert outcome(wrong["orders"]) == ("INVALID_REPLICA_ASSIGNMENT: The manual partition assignment "
                                        "includes broker 2, but no such broker is registered.")
    short = admin.create_partitions([NewPartitions("orders", 8, replica_assignment=[[1]])])
    assert outcome(short["orders"]) == ("INVALID_REPLICA_ASSIGNMENT: Attempted to add 3 additional "
                                        "partition(s), but only 1 assignment(s) were specified.")
    twice = admin.create_partitions([NewPartitions("orders", 6, replica_assignment=[[1, 1]])])
    assert outcome(twice["orders"]) == ("INVALID_REPLICA_ASSIGNMENT: The manual partition assignment "
                                        "includes the broker 1 more than once.")
    assert partition_count(admin, "orders") == 5
    placed = admin.create_partitions([NewPartitions("orders", 7, replica_assignment=[[1], [1]])])
    assert outcome(placed["orders"]) is None
    assert partition_count(admin, "orders") == 7
    broker.restart()
    assert partition_count(admin, "orders") == 7


def test_create_partitions_with_kafka_python(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        confluent_admin(broker.bootstrap)
        answer = admin.create_partitions({"orders": 4, "nope": 2}, raise_errors=False)
        results = {r.name: (r.error_code, r.error_message) for r in answer.results}
        assert results == {"orders": (E.NONE, None), "nope": (E.UNKNOWN_TOPIC_OR_PARTITION, None)}
        described = admin.describe_topics(["orders"])
        assert len(described[0]["partitions"]) == 4
    finally:
        admin.close()


def test_a_subscribed_consumer_gets_records_of_a_new_partition(broker):
    admin = confluent_admin(broker.bootstrap)
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "topic.metadata.refresh.interval.ms": 500})
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "grows",
                            "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500,
                            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
    seen: set[tuple[int, bytes]] = set()

    def got(wanted) -> bool:
        for m in consumer.consume(100, 0.2):
            assert m.error() is None, m.error()
            seen.add((m.partition(), m.value()))
        return wanted <= seen

    try:
        consumer.subscribe(["orders"])
        producer.produce("orders", b"before", partition=1)
        assert producer.flush(10) == 0
        wait_until(lambda: got({(1, b"before")}), 30, "the record on an old partition")
        assert outcome(admin.create_partitions([NewPartitions("orders", 3)])["orders"]) is None
        wait_until(lambda: len(producer.list_topics("orders", timeout=5).topics["orders"].partitions) == 3,
                   10, "the producer to see 3 partitions")
        producer.produce("orders", b"after", partition=2)
        assert producer.flush(10) == 0
        wait_until(lambda: got({(2, b"after")}), 30, "the record on the new partition")
        assert {tp.partition for tp in consumer.assignment()} == {0, 1, 2}
    finally:
        consumer.close()


async def test_create_partitions_bounds_and_duplicates(serve_broker):
    """Kafka's controller writes one record per new partition into a list bounded at 10,000:
    the topic that overflows it (and every later growing one) fails with UNKNOWN_SERVER_ERROR."""
    broker = await serve_broker({})
    client = await TrioClient.connect(broker.port)
    for name in ("a", "b", "c"):
        await create(client, name)

    def T(name: str, count: int):                   # clients send null assignments
        return CreatePartitions.CreatePartitionsTopic(name=name, count=count, assignments=None)

    async def grow(*topics, validate_only=False):
        answer = await client.call(ApiKey.CREATE_PARTITIONS, 3, CreatePartitions(topics=topics, timeout_ms=30_000,
                                                          validate_only=validate_only))
        return [(r.name, r.error_code, r.error_message) for r in answer.results]

    assert await grow(T(name="a", count=9_001), T(name="b", count=1_002), T(name="c", count=2),
                      validate_only=True) == [
        ("a", E.NONE, None), ("b", E.UNKNOWN_SERVER_ERROR, None), ("c", E.UNKNOWN_SERVER_ERROR, None)]
    assert await grow(T(name="a", count=2), T(name="b", count=3), T(name="a", count=4)) == [
        ("a", E.INVALID_REQUEST, "Duplicate topic name."), ("b", E.NONE, None)]
    store = broker.handlers.data.store
    assert [len(t.partitions) for t in store.topics()] == [1, 3, 1]
    assert await grow(T(name="c", count=10_002)) == [("c", E.UNKNOWN_SERVER_ERROR, None)]
    assert len(store.topic("c").partitions) == 1
    assert await grow(T(name="c", count=10_001)) == [("c", E.NONE, None)]       # exactly the bound
    assert len(store.topic("c").partitions) == 10_001
    for v in (0, 1, 2):
        answer = await client.call(ApiKey.CREATE_PARTITIONS, v, CreatePartitions(topics=(T(name="a", count=0),), timeout_ms=1000))
        assert answer.results[0].error_message == "The topic a currently has 1 partition(s); 0 would not be an increase."


def test_a_partition_increase_cut_short_is_discarded_at_start(tmp_path):
    """A crash after the new partitions' directories were made but before partition 0's
    metadata named the new count: directories with neither metadata nor data go."""
    store = TopicStore(tmp_path)
    store.create_topic("t", 2)
    store.close()
    os.makedirs(tmp_path / "t-2")                       # its metadata never reached the disk
    os.makedirs(tmp_path / "t-3")
    (tmp_path / "t-3" / "partition.metadata.tmp").write_text("")
    again = TopicStore(tmp_path)
    assert len(again.topic("t").partitions) == 2
    assert not (tmp_path / "t-2").exists() and not (tmp_path / "t-3").exists()
    again.add_partitions("t", 4)
    again.close()
    assert len(TopicStore(tmp_path).topic("t").partitions) == 4


def test_a_partition_increase_that_reached_any_new_partition_comes_back_whole(tmp_path):
    """Partition 0 still names the old count, but one new partition's metadata (naming the new
    count) survived: the increase is complete after the start, never partial."""
    store = TopicStore(tmp_path)
    store.create_topic("t", 2)
    store.add_partitions("t", 5)
    store.close()
    for p in (0, 1):
        text = (tmp_path / f"t-{p}" / "partition.metadata").read_text()
        (tmp_path / f"t-{p}" / "partition.metadata").write_text(text.replace("count: 5", "count: 2"))
    for p in (2, 3):
        for entry in os.listdir(tmp_path / f"t-{p}"):
            os.remove(tmp_path / f"t-{p}" / entry)
        os.rmdir(tmp_path / f"t-{p}")
    assert len(TopicStore(tmp_path).topic("t").partitions) == 5


# --- DeleteRecords -------------------------------------------------------------------------------

def produce_values(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, str(i).encode(), partition=partition)
        producer.flush(10)                          # one batch per record: offsets i
    assert producer.flush(10) == 0


def first_offset_consumed(bootstrap: str, topic: str, partition: int) -> tuple[int, bytes]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"from-start-{os.getpid()}",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([CkPartition(topic, partition, ck.OFFSET_BEGINNING)])
        message = wait_until(lambda: next(iter(consumer.consume(1, 0.5)), None), 20, "a record")
        assert message.error() is None, message.error()
        return message.offset(), message.value()
    finally:
        consumer.close()


def test_delete_records_with_kafka_python_then_a_consumer_starts_at_the_new_log_start(broker):
    confluent_admin(broker.bootstrap)
    produce_values(broker.bootstrap, "orders", 0, 10)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        deleted = admin.delete_records({TopicPartition("orders", 0): 4})
        assert deleted[TopicPartition("orders", 0)]["low_watermark"] == 4
        assert admin.delete_records({TopicPartition("orders", 0): 2})[TopicPartition("orders", 0)][
            "low_watermark"] == 4                                        # never moves back
        with pytest.raises(kafka.errors.OffsetOutOfRangeError):
            admin.delete_records({TopicPartition("orders", 0): 11})
        with pytest.raises(kafka.errors.OffsetOutOfRangeError):
            admin.delete_records({TopicPartition("orders", 1): 1})        # an empty partition
    finally:
        admin.close()
    assert first_offset_consumed(broker.bootstrap, "orders", 0) == (4, b"4")
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "marks"})
    try:
        assert consumer.get_watermark_offsets(CkPartition("orders", 0), timeout=10) == (4, 10)
    finally:
        consumer.close()


def test_delete_records_with_confluent_kafka_survives_a_restart_and_a_crash(broker):
    admin = confluent_admin(broker.bootstrap)
    produce_values(broker.bootstrap, "orders", 1, 6)
    futures = admin.delete_records([CkPartition("orders", 1, 3)])
    assert futures[CkPartition("orders", 1, 3)].result(15).low_watermark == 3
    broker.restart()
    assert first_offset_consumed(broker.bootstrap, "orders", 1) == (3, b"3")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})      # one that never saw it down
    everything = admin.delete_records([CkPartition("orders", 1, ck.OFFSET_END)])   # -1: the high watermark
    assert next(iter(everything.values())).result(15).low_watermark == 6
    broker.kill()                                            # no clean shutdown
    broker.start(broker.port)
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "marks"})
    try:
        assert consumer.get_watermark_offsets(CkPartition("orders", 1), timeout=10) == (6, 6)
    finally:
        consumer.close()


async def test_delete_records_edges_on_the_wire(serve_broker):
    broker = await serve_broker({})
    client = await TrioClient.connect(broker.port)
    await create(client, "t", 2)
    for i in range(5):
        await produce(client, "t", 0, batch([b"%d" % i]))
    T = DeleteRecords.DeleteRecordsTopic
    P = T.DeleteRecordsPartition

    async def delete(topic: str, *partitions):
        answer = await client.call(ApiKey.DELETE_RECORDS, 2, DeleteRecords(timeout_ms=1000, topics=(T(name=topic, partitions=tuple(
            P(partition_index=p, offset=o) for p, o in partitions)),)))
        return [(r.partition_index, r.error_code, r.low_watermark) for t in answer.topics for r in t.partitions]

    assert await delete("t", (0, 2), (1, -2), (7, 0)) == [
        (0, E.NONE, 2), (1, E.OFFSET_OUT_OF_RANGE, -1), (7, E.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    assert await delete("t", (0, 1), (0, 3)) == [(0, E.NONE, 3)]          # the last offset named wins
    assert await delete("nope", (0, 0)) == [(0, E.UNKNOWN_TOPIC_OR_PARTITION, -1)]
    assert await delete("__consumer_offsets", (0, 0)) == [(0, E.INVALID_TOPIC_EXCEPTION, -1)]
    below = await client.call(ApiKey.FETCH, 12, fetch("t", offset=2))
    part = below.responses[0].partitions[0]
    # as Kafka's ReplicaManager answers any read error: no offsets (tests/oracle/test_data.py)
    assert (part.error_code, part.log_start_offset, part.high_watermark) == (E.OFFSET_OUT_OF_RANGE, -1, -1)
    at = await client.call(ApiKey.FETCH, 12, fetch("t", offset=3))
    assert values_of(at.responses[0].partitions[0].records) == [(3, b"3"), (4, b"4")]
    lo = ListOffsets.ListOffsetsTopic
    earliest = await client.call(ApiKey.LIST_OFFSETS, 7, ListOffsets(replica_id=-1, topics=(lo(name="t", partitions=(
        lo.ListOffsetsPartition(partition_index=0, timestamp=-2),)),)))
    assert earliest.topics[0].partitions[0].offset == 3
    assert await delete("t", (0, -1)) == [(0, E.NONE, 5)]
    await produce(client, "t", 0, batch([b"5"]))
    assert values_of((await client.call(ApiKey.FETCH, 12, fetch("t", offset=5))).responses[0].partitions[0].records) == [(5, b"5")]


async def test_whole_segments_below_the_log_start_are_deleted(serve_broker, tmp_path):
    broker = await serve_broker({"log.segment.bytes": "200"})
    client = await TrioClient.connect(broker.port)
    await create(client, "t")
    for i in range(6):
        await produce(client, "t", 0, batch([b"x" * 100]))            # one segment per batch
    directory = tmp_path / "t-0"

    def segments() -> list[int]:
        return sorted(int(n[:-4]) for n in os.listdir(directory) if n.endswith(".log"))

    assert segments() == [0, 1, 2, 3, 4, 5]
    T = DeleteRecords.DeleteRecordsTopic
    answer = await client.call(ApiKey.DELETE_RECORDS, 2, DeleteRecords(timeout_ms=1000, topics=(T(name="t", partitions=(
        T.DeleteRecordsPartition(partition_index=0, offset=3),)),)))
    assert answer.topics[0].partitions[0].low_watermark == 3
    assert segments() == [3, 4, 5]
    answer = await client.call(ApiKey.DELETE_RECORDS, 2, DeleteRecords(timeout_ms=1000, topics=(T(name="t", partitions=(
        T.DeleteRecordsPartition(partition_index=0, offset=-1),)),)))
    assert answer.topics[0].partitions[0].low_watermark == 6
    assert segments() == [5]                                # the active segment always stays


def test_a_log_whose_end_fell_below_its_log_start_restarts_empty_there(tmp_path):
    """Kafka's LogLoader: data lost below the checkpointed log start never hands its offsets out
    again."""
    store = TopicStore(tmp_path)
    store.create_topic("t", 1)
    plog = store.partition("t", 0)
    for i in range(4):
        plog.append(batch([b"%d" % i]), 0)
    plog.checkpoint_log_start(4)
    assert plog.advance_log_start(4) == 4
    store.close()
    for entry in os.listdir(tmp_path / "t-0"):
        if entry.endswith(".log"):
            os.truncate(tmp_path / "t-0" / entry, 0)           # the data was never synced
    again = TopicStore(tmp_path).partition("t", 0)
    assert (again.log_start_offset, again.high_watermark) == (4, 4)
    assert again.append(batch([b"next"]), 0).base_offset == 4


async def test_delete_records_that_cannot_be_made_durable_changes_nothing(serve_broker, tmp_path):
    broker = await serve_broker({})
    client = await TrioClient.connect(broker.port)
    await create(client, "t")
    await produce(client, "t", 0, batch([b"a", b"b"]))
    os.mkdir(tmp_path / "t-0" / "log-start-offset")        # the checkpoint cannot replace a directory
    T = DeleteRecords.DeleteRecordsTopic
    answer = await client.call(ApiKey.DELETE_RECORDS, 2, DeleteRecords(timeout_ms=1000, topics=(T(name="t", partitions=(
        T.DeleteRecordsPartition(partition_index=0, offset=1),)),)))
    assert [(p.error_code, p.low_watermark) for p in answer.topics[0].partitions] == [(E.KAFKA_STORAGE_ERROR, -1)]
    still = await client.call(ApiKey.FETCH, 12, fetch("t", offset=0))
    assert values_of(still.responses[0].partitions[0].records) == [(0, b"a"), (1, b"b")]
