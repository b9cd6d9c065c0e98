"""Hostile sizes, full disks and corrupt files over real sockets: the broker answers with
Kafka's errors, keeps serving everything else, and always starts again."""

from __future__ import annotations

import errno
import logging
import time

import pytest
import trio

from coordinator.routing import shard_for
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.unit.topic_log.test_batches import batch, values_of
from tests.support.trio_client import TrioClient
from tests.support.wire import join_stable_member

CreateTopics, Produce, Fetch = REQUESTS[ApiKey.CREATE_TOPICS].cls, REQUESTS[ApiKey.PRODUCE].cls, REQUESTS[ApiKey.FETCH].cls
Heartbeat, JoinGroup, Metadata = REQUESTS[ApiKey.HEARTBEAT].cls, REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.METADATA].cls
InitProducerId = REQUESTS[ApiKey.INIT_PRODUCER_ID].cls


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({"group.initial.rebalance.delay.ms": "0",
                               "group.min.session.timeout.ms": "500"})


def create(*topics: tuple[str, int]) -> CreateTopics:
    return CreateTopics(topics=tuple(CreateTopics.CreatableTopic(name=name, num_partitions=n,
                                                                 replication_factor=1)
                                     for name, n in topics), timeout_ms=60_000)


async def produce(client: TrioClient, topic: str, records: bytes):
    data = Produce.TopicProduceData.PartitionProduceData(index=0, records=records)
    answer = await client.call(ApiKey.PRODUCE, 3, Produce(acks=-1, timeout_ms=5000, topic_data=(
        Produce.TopicProduceData(name=topic, partition_data=(data,)),)))
    return answer.responses[0].partition_responses[0]


async def fetch_all(client: TrioClient, topic: str) -> list[tuple[int, bytes]]:
    t = Fetch.FetchTopic
    answer = await client.call(ApiKey.FETCH, 12, Fetch(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=(
        t(topic=topic, partitions=(t.FetchPartition(partition=0, fetch_offset=0,
                                                    partition_max_bytes=1 << 20),)),)))
    return values_of(answer.responses[0].partitions[0].records)


async def test_create_topics_beyond_kafkas_record_limit_fails_whole_and_creates_nothing(broker):
    client = await TrioClient.connect(broker.port)
    with trio.fail_after(5):
        # 3 topic records + 10,000 partition records: more than Kafka's controller takes
        answer = await client.call(ApiKey.CREATE_TOPICS, 5, create(("a", 5_000), ("b", 4_999), ("c", 1)))
    assert [(t.name, t.error_code, t.error_message) for t in answer.topics] == [
        (name, ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
        for name in ("a", "b", "c")]
    assert broker.handlers.data.store.topics() == []
    validated = await client.call(ApiKey.CREATE_TOPICS, 5, CreateTopics(topics=create(("c", 25_000)).topics,
                                                      timeout_ms=1000, validate_only=True))
    assert (validated.topics[0].error_code, validated.topics[0].error_message) == (
        ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")


async def test_a_large_create_topics_does_not_stall_other_connections(broker):
    member_client, creator = await TrioClient.connect(broker.port), await TrioClient.connect(broker.port)
    member, generation = await join_stable_member(member_client, "steady")
    created = trio.Event()
    outcome = []

    async def create_big():
        outcome.append(await creator.call(ApiKey.CREATE_TOPICS, 5, create(("big", 9_999))))     # 10,000 records: allowed
        created.set()

    beats_meanwhile = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(create_big)
        with trio.fail_after(60):
            while not created.is_set():
                answer = await member_client.call(ApiKey.HEARTBEAT, 4, Heartbeat(group_id="steady", generation_id=generation,
                                                                   member_id=member))
                assert answer.error_code == ErrorCode.NONE
                beats_meanwhile += not created.is_set()
                # paced like a client (which beats every few seconds): back to back, these
                # beats would keep the interpreter's lock from the thread creating the topic
                await trio.sleep(0.01)
    assert outcome[0].topics[0].error_code == ErrorCode.NONE
    assert outcome[0].topics[0].num_partitions == 9_999
    assert beats_meanwhile >= 3, "heartbeats waited for the topic creation"


async def test_a_full_disk_answers_kafka_storage_error_and_heals_without_restart(broker, caplog):
    caplog.set_level(logging.INFO)
    client = await TrioClient.connect(broker.port)
    assert (await client.call(ApiKey.CREATE_TOPICS, 5, create(("t", 1)))).topics[0].error_code == ErrorCode.NONE
    for value in (b"a", b"b"):
        assert (await produce(client, "t", batch([value]))).error_code == ErrorCode.NONE
    disk = broker.handlers.data.store.disk
    for error in (errno.ENOSPC, errno.EIO):
        disk.fail(error)
        refused = await produce(client, "t", batch([b"lost"]))
        assert (refused.error_code, refused.base_offset) == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
        assert [v for _, v in await fetch_all(client, "t")] == [b"a", b"b"]     # reads still served
    disk.heal()
    healed = await produce(client, "t", batch([b"c"]))
    assert (healed.error_code, healed.base_offset) == (ErrorCode.NONE, 2)
    assert await fetch_all(client, "t") == [(0, b"a"), (1, b"b"), (2, b"c")]
    assert "back online" in caplog.text


# --- a real `groupbroker serve` process -----------------------------------------------------

def group_on_shard(shard: int, prefix: str) -> str:
    return next(f"{prefix}-{i}" for i in range(10_000) if shard_for(f"{prefix}-{i}") == shard)


async def test_start_up_survives_a_corrupt_producer_ids_file_and_a_shard_folder_that_is_a_file(
        tmp_path, start_broker):
    data = tmp_path / "data"
    data.mkdir()
    (data / "producer_ids").write_bytes(b"\x00\x13garbage")
    broken = group_on_shard(7, "broken")
    (data / "__consumer_offsets-7").write_text("not a directory")
    b = start_broker({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 500})
    b.wait_for_log(r"shard 7: offsets log failed")
    log = b.log_since_start()
    assert "producer_ids is unreadable" in log and "__consumer_offsets-7: cannot open the log" in log
    client = await TrioClient.connect(b.port)
    await join_stable_member(client, group_on_shard(8, "healthy"))          # other shards serve
    join = JoinGroup(group_id=broken, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                     member_id="", protocol_type="consumer",
                     protocols=(JoinGroup.JoinGroupRequestProtocol(name="range", metadata=b""),))
    assert (await client.call(ApiKey.JOIN_GROUP, 5, join)).error_code == ErrorCode.NOT_COORDINATOR
    pid = await client.call(ApiKey.INIT_PRODUCER_ID, 4, InitProducerId(transactional_id=None, transaction_timeout_ms=60_000))
    assert pid.error_code == ErrorCode.NONE and pid.producer_id >= 1 << 40
    await client.aclose()


async def test_clean_shutdown_skips_recovery_and_a_kill_recovers_the_tail(tmp_path, start_broker):
    b = start_broker({})
    client = await TrioClient.connect(b.port)
    assert (await client.call(ApiKey.CREATE_TOPICS, 5, create(("t", 3)))).topics[0].error_code == ErrorCode.NONE
    assert (await produce(client, "t", batch([b"a"]))).error_code == ErrorCode.NONE
    await client.aclose()
    assert b.restart() == 0
    assert "clean shutdown recorded: opening 3 partition log(s) without recovery" in b.log_since_start()
    b.kill()
    b.start()
    assert "no clean shutdown recorded: recovering the active segment of 3" in b.log_since_start()
    client = await TrioClient.connect(b.port)
    assert await fetch_all(client, "t") == [(0, b"a")]
    await client.aclose()


async def test_a_kill_while_creating_a_topic_never_prevents_a_restart(tmp_path, start_broker):
    b = start_broker({})
    client = await TrioClient.connect(b.port)
    await client.send(ApiKey.CREATE_TOPICS, 5, create(("big", 9_999)))
    deadline = time.monotonic() + 20
    while not (tmp_path / "data" / "big-100").exists():                 # well into the creation
        assert time.monotonic() < deadline, "the creation never began"
        await trio.sleep(0.005)
    b.kill()
    await client.aclose()
    b.start()
    log = b.log_since_start()
    assert "recovered topic big" in log or "discarding partition(s)" in log
    client = await TrioClient.connect(b.port)
    answer = await client.call(ApiKey.METADATA, 9, Metadata(topics=(Metadata.MetadataRequestTopic(name="big"),),
                                              allow_auto_topic_creation=False))
    topic = answer.topics[0]
    assert (topic.error_code, len(topic.partitions)) in ((ErrorCode.NONE, 9_999),
                                                         (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0))
    await client.aclose()
