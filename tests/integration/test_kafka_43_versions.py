"""The API versions Kafka 4.3 added, over real sockets: what ApiVersions advertises, and each new
version served as Apache Kafka 4.3.1 answers it (checked against a running Kafka 4.3.1).

Produce from v0 (advertised, v0-2 refused by closing the connection) to v13 (topics by id),
Fetch v18, ListOffsets v10-11 (the earliest pending upload, -6), OffsetCommit and OffsetFetch
v10 (topics by id), DescribeLogDirs v5 (never cordoned), ListTransactions v2 (an RE2/J id
pattern)."""

from __future__ import annotations

import struct
import uuid

import pytest
import trio

from tests.support.trio_client import TrioClient
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.wire import ZERO_UUID
from tests.unit.topic_log.test_batches import batch

UNKNOWN_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")
Produce = REQUESTS[ApiKey.PRODUCE].cls
TopicData = Produce.TopicProduceData
ListOffsets = REQUESTS[ApiKey.LIST_OFFSETS].cls
Commit = REQUESTS[ApiKey.OFFSET_COMMIT].cls
CommitTopic = Commit.OffsetCommitRequestTopic
OffsetFetch = REQUESTS[ApiKey.OFFSET_FETCH].cls
FetchGroup = OffsetFetch.OffsetFetchRequestGroup
ListTransactions = REQUESTS[ApiKey.LIST_TRANSACTIONS].cls


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({"group.initial.rebalance.delay.ms": "0"})


@pytest.fixture
async def client(broker):
    client = await TrioClient.connect(broker.port)
    yield client
    await client.aclose()


async def create(client: TrioClient, name: str, partitions: int = 1) -> uuid.UUID:
    ct = REQUESTS[ApiKey.CREATE_TOPICS].cls
    answer = await client.call(ApiKey.CREATE_TOPICS, 7, ct(topics=(ct.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1),)))
    assert answer.topics[0].error_code == E.NONE
    return answer.topics[0].topic_id


def partition(index: int, *values: bytes):
    return TopicData.PartitionProduceData(index=index, records=batch(list(values or [b"v"])))


def errors_of(topics) -> list:
    """[(topic id, [(partition, error)])] of an OffsetCommit answer."""
    return [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in topics]


async def test_api_versions_advertises_kafka_4_3_ranges(client):
    api = REQUESTS[ApiKey.API_VERSIONS].cls
    answer = await client.call(ApiKey.API_VERSIONS, 4, api(client_software_name="t", client_software_version="1"))
    ranges = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert {key: ranges[key] for key in (0, 1, 2, 8, 9, 35, 66)} == {
        0: (0, 13), 1: (4, 18), 2: (1, 11), 8: (2, 10), 9: (1, 10), 35: (1, 5), 66: (0, 2)}
    # transaction version 2's: whatever transaction.version is finalized, as Kafka advertises them
    assert (ranges[ApiKey.ADD_PARTITIONS_TO_TXN], ranges[ApiKey.END_TXN], ranges[ApiKey.TXN_OFFSET_COMMIT]) == (
        (0, 5), (0, 5), (0, 5))
    assert {f.name: f.max_version_level for f in answer.finalized_features}["transaction.version"] == 2


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_produce_below_v3_closes_the_connection_unanswered(client, version):
    """Advertised from v0 (KAFKA-18659), refused as Kafka's SocketServer refuses a version it
    does not speak: no answer, the connection closed."""
    head = struct.pack(">hhih", ApiKey.PRODUCE, version, 9, 1) + b"t"
    body = struct.pack(">hii", 1, 1000, 0)                 # acks, timeout, no topics
    await client.send_raw(struct.pack(">i", len(head) + len(body)) + head + body)
    with trio.fail_after(5):
        assert await client.closed_by_peer()


async def test_produce_v12_is_v11(client):
    await create(client, "by-name")
    answer = await client.call(ApiKey.PRODUCE, 12, Produce(acks=-1, timeout_ms=1000, topic_data=(
        TopicData(name="by-name", partition_data=(partition(0), partition(3))),)))
    assert [(t.name, [(p.index, p.error_code) for p in t.partition_responses]) for t in answer.responses] == [
        ("by-name", [(0, E.NONE), (3, E.UNKNOWN_TOPIC_OR_PARTITION)])]


async def test_produce_v13_names_topics_by_id(client):
    known = await create(client, "by-id", 2)
    answer = await client.call(ApiKey.PRODUCE, 13, Produce(acks=-1, timeout_ms=1000, topic_data=(
        TopicData(topic_id=known, partition_data=(partition(0, b"a", b"b"), partition(5))),
        TopicData(topic_id=UNKNOWN_ID, partition_data=(partition(0),)),
        TopicData(name="by-id", partition_data=(partition(1),)))))     # the name is not sent at v13
    assert [(t.topic_id, [(p.index, p.error_code, p.base_offset) for p in t.partition_responses])
            for t in answer.responses] == [
        (known, [(0, E.NONE, 0), (5, E.UNKNOWN_TOPIC_OR_PARTITION, -1)]),
        (UNKNOWN_ID, [(0, E.UNKNOWN_TOPIC_ID, -1)]),
        (ZERO_UUID, [(1, E.UNKNOWN_TOPIC_ID, -1)])]
    fetch = REQUESTS[ApiKey.FETCH].cls
    topic = fetch.FetchTopic
    read = await client.call(ApiKey.FETCH, 18, fetch(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=(
        topic(topic_id=known, partitions=(topic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20,
                                                               high_watermark=2),)),)))
    data = read.responses[0].partitions[0]
    assert (read.responses[0].topic_id, data.error_code, data.high_watermark) == (known, E.NONE, 2)
    assert data.records


async def list_offset(client, version: int, timestamp: int, topic: str = "lo"):
    t = ListOffsets.ListOffsetsTopic
    answer = await client.call(ApiKey.LIST_OFFSETS, version, ListOffsets(replica_id=-1, timeout_ms=500, topics=(
        t(name=topic, partitions=(t.ListOffsetsPartition(partition_index=0, timestamp=timestamp),)),)))
    p = answer.topics[0].partitions[0]
    return p.error_code, p.timestamp, p.offset, p.leader_epoch


async def test_list_offsets_v10_v11_and_the_earliest_pending_upload(client):
    await create(client, "lo")
    await client.call(ApiKey.PRODUCE, 9, Produce(acks=-1, timeout_ms=1000, topic_data=(
        TopicData(name="lo", partition_data=(partition(0, b"a", b"b"),)),)))
    assert await list_offset(client, 10, -1) == (E.NONE, -1, 2, 0)
    assert await list_offset(client, 11, -2) == (E.NONE, -1, 0, 0)
    # no tiered storage: nothing tiered (-5), nothing pending upload (-6)
    assert await list_offset(client, 11, -6) == (E.NONE, -1, -1, -1)
    assert await list_offset(client, 9, -5) == (E.NONE, -1, -1, -1)
    # a special timestamp the version does not know, before any check of the partition
    assert await list_offset(client, 10, -6) == (E.UNSUPPORTED_VERSION, -1, -1, -1)
    assert await list_offset(client, 11, -6, topic="nope") == (E.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1)
    assert await list_offset(client, 11, -7) == (E.UNSUPPORTED_VERSION, -1, -1, -1)
    assert await list_offset(client, 6, -3) == (E.UNSUPPORTED_VERSION, -1, -1, -1)


def committed(index: int, offset: int):
    return CommitTopic.OffsetCommitRequestPartition(partition_index=index, committed_offset=offset,
                                                     committed_metadata="m")


async def test_offset_commit_and_fetch_v10_name_topics_by_id(client):
    one, two = await create(client, "c1", 2), await create(client, "c2")
    topics = (CommitTopic(topic_id=one, partitions=(committed(0, 11), committed(7, 1))),
              CommitTopic(topic_id=UNKNOWN_ID, partitions=(committed(0, 1),)),
              CommitTopic(topic_id=two, partitions=(committed(0, 12),)),
              CommitTopic(topic_id=one, partitions=(committed(1, 13),)))
    answer = await client.call(ApiKey.OFFSET_COMMIT, 10, Commit(group_id="g10", generation_id_or_member_epoch=-1,
                                                                topics=topics))
    # Kafka's order: the API layer's errors first, the coordinator's results merged into them
    assert errors_of(answer.topics) == [
        (one, [(7, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE), (1, E.NONE)]),
        (UNKNOWN_ID, [(0, E.UNKNOWN_TOPIC_ID)]),
        (two, [(0, E.NONE)])]
    topics = FetchGroup.OffsetFetchRequestTopics
    fetched = await client.call(ApiKey.OFFSET_FETCH, 10, OffsetFetch(groups=(
        FetchGroup(group_id="g10", topics=(topics(topic_id=UNKNOWN_ID, partition_indexes=(0,)),
                                           topics(topic_id=one, partition_indexes=(0, 1, 5)))),
        FetchGroup(group_id="g10", topics=None))))
    asked, every = fetched.groups
    assert [(t.topic_id, [(p.partition_index, p.committed_offset, p.error_code) for p in t.partitions])
            for t in asked.topics] == [
        (one, [(0, 11, E.NONE), (1, 13, E.NONE), (5, -1, E.NONE)]),
        (UNKNOWN_ID, [(0, -1, E.UNKNOWN_TOPIC_ID)])]
    assert sorted((t.topic_id, [p.committed_offset for p in t.partitions]) for t in every.topics) == sorted(
        [(one, [11, 13]), (two, [12])])
    by_name = await client.call(ApiKey.OFFSET_FETCH, 9, OffsetFetch(groups=(FetchGroup(group_id="g10", topics=(
        topics(name="c2", partition_indexes=(0,)),)),)))
    assert by_name.groups[0].topics[0].partitions[0].committed_offset == 12


async def test_offset_commit_v10_of_unknown_ids_only_never_reaches_the_coordinator(client):
    """Nothing left for the coordinator: no group check (the generation is wrong), no group."""
    answer = await client.call(ApiKey.OFFSET_COMMIT, 10, Commit(
        group_id="never", generation_id_or_member_epoch=5, member_id="m", topics=(
            CommitTopic(topic_id=UNKNOWN_ID, partitions=(committed(0, 1),)),)))
    assert errors_of(answer.topics) == [(UNKNOWN_ID, [(0, E.UNKNOWN_TOPIC_ID)])]
    groups = await client.call(ApiKey.LIST_GROUPS, 4, REQUESTS[ApiKey.LIST_GROUPS].cls())
    assert "never" not in {g.group_id for g in groups.groups}


async def test_describe_log_dirs_v5_says_no_dir_is_cordoned(client):
    await create(client, "dirs")
    dl = REQUESTS[ApiKey.DESCRIBE_LOG_DIRS].cls
    answer = await client.call(ApiKey.DESCRIBE_LOG_DIRS, 5, dl(topics=(dl.DescribableLogDirTopic(
        topic="dirs", partitions=(0,)),)))
    [result] = answer.results
    assert (result.error_code, result.is_cordoned, [t.name for t in result.topics]) == (E.NONE, False, ["dirs"])
    assert result.total_bytes > 0


async def test_list_transactions_v2_filters_ids_by_an_re2j_pattern(client):
    init = REQUESTS[ApiKey.INIT_PRODUCER_ID].cls
    for tid in ("tx-1", "tx-22", "other"):
        with trio.fail_after(10):
            while (await client.call(ApiKey.INIT_PRODUCER_ID, 4, init(
                    transactional_id=tid, transaction_timeout_ms=60000))).error_code != E.NONE:
                await trio.sleep(0.1)

    async def listed(pattern, states=()):
        answer = await client.call(ApiKey.LIST_TRANSACTIONS, 2, ListTransactions(
            state_filters=states, transactional_id_pattern=pattern))
        return answer.error_code, sorted(s.transactional_id for s in answer.transaction_states), \
            answer.unknown_state_filters

    assert await listed(None) == await listed("") == (E.NONE, ["other", "tx-1", "tx-22"], ())
    assert await listed("tx-.*") == (E.NONE, ["tx-1", "tx-22"], ())
    assert await listed("tx") == (E.NONE, [], ())                    # the whole id must match
    assert await listed("(?i)TX-\\d") == (E.NONE, ["tx-1"], ())
    # what Java's regex takes but RE2/J refuses: a backreference, a lookahead
    assert await listed("(tx)-\\1") == (E.INVALID_REGULAR_EXPRESSION, [], ())
    assert await listed("(?=t).*") == (E.INVALID_REGULAR_EXPRESSION, [], ())
    # an invalid pattern fails the whole list, unknown state filters and all
    assert await listed("[", states=("Bogus",)) == (E.INVALID_REGULAR_EXPRESSION, [], ())
    assert await listed("o.*", states=("Bogus",)) == (E.NONE, [], ("Bogus",))
