"""The data plane against Apache Kafka 4.3.1: Produce, Fetch (its edge cases, read_committed and
fetch sessions), ListOffsets, DeleteRecords, OffsetForLeaderEpoch and DescribeProducers, at every
version we serve. Each answer is compared field by field."""

import dataclasses
import time
import uuid

import pytest
import trio

from protocol.api_keys import ApiKey
from coordinator.routing import shard_for
from tests.oracle.steps import batch, create_topic, req, sub, unique, versions
from tests.support.differential import Alias

P, F, LO = ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS
DR, OLE, DP = ApiKey.DELETE_RECORDS, ApiKey.OFFSET_FOR_LEADER_EPOCH, ApiKey.DESCRIBE_PRODUCERS
TS = 1_700_000_000_000
#: no topic has this id, on either broker
UNKNOWN_ID = uuid.UUID("0b5e1c3a-96a4-4a43-8d0c-6c4a3b1e2f70")
TOPIC_IDS = {P: 13, F: 13}


async def topic_alias(oracle, name: str) -> Alias:
    """The alias of topic ``name``'s id (each side's own id stands behind it)."""
    meta = req(ApiKey.METADATA, topics=(sub(ApiKey.METADATA, "MetadataRequestTopic", name=name),),
               allow_auto_topic_creation=False)
    answer = await oracle.call(ApiKey.METADATA, 12, meta)
    return Alias(answer["topics"][0]["topic_id"])


def topic_ref(api, version, name, topic_id) -> dict:
    return {"topic_id": topic_id} if version >= TOPIC_IDS[api] else ({"name": name} if api == P else {"topic": name})


def produce_body(version, name, topic_id, parts: dict, *, acks=-1, transactional_id=None):
    return req(P, transactional_id=transactional_id, acks=acks, timeout_ms=30000, topic_data=(
        sub(P, "TopicProduceData", **topic_ref(P, version, name, topic_id), partition_data=tuple(
            sub(P, "PartitionProduceData", index=p, records=data) for p, data in parts.items())),))


def fetch_body(version, topics: dict, *, isolation=0, session_id=0, epoch=-1, forgotten=(), max_bytes=1 << 20):
    """``topics``: (name, id) -> {partition: offset}."""
    return req(F, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=isolation,
               session_id=session_id, session_epoch=epoch, topics=tuple(
                   sub(F, "FetchTopic", **topic_ref(F, version, name, topic_id), partitions=tuple(
                       sub(F, "FetchPartition", partition=p, fetch_offset=o, partition_max_bytes=1 << 20)
                       for p, o in parts.items()))
                   for (name, topic_id), parts in topics.items()),
               forgotten_topics_data=tuple(forgotten))


async def topic_with_records(oracle, request, partitions=2, records=3, configs=()):
    """A new topic; ``records`` records in partition 0 (timestamps TS, TS+1...); its alias."""
    name = unique(request)
    await create_topic(oracle, name, partitions=partitions, configs=configs)
    alias = await topic_alias(oracle, name)
    if records:
        await oracle.call(P, 9, produce_body(9, name, alias, {0: batch([b"v%d" % i for i in range(records)],
                                                                     timestamp=TS)}))
    return name, alias


_PRODUCER_ZERO_TAKEN = []


async def init_producer(oracle, transactional_id: str | None) -> dict:
    """InitProducerId on both, compared. Kafka's transaction coordinator loads the partition of
    a transactional id a while after it starts (COORDINATOR_LOAD_IN_PROGRESS meanwhile): another
    id of the same partition asks Kafka alone until it is loaded. Each broker's first producer id
    is 0, which the harness cannot tell from "no id": each takes it first, uncompared."""
    kafka = oracle.kafka.client
    if not _PRODUCER_ZERO_TAKEN:
        for side in oracle.sides:
            await side.client.call(ApiKey.INIT_PRODUCER_ID, 4, req(ApiKey.INIT_PRODUCER_ID, transactional_id=None,
                                                                   transaction_timeout_ms=60000))
        _PRODUCER_ZERO_TAKEN.append(True)
    if transactional_id is not None:
        shard, n = shard_for(transactional_id), 0
        while shard_for(probe := f"{transactional_id}-probe{n}") != shard:
            n += 1
        with trio.fail_after(20):
            while (await kafka.call(ApiKey.INIT_PRODUCER_ID, 4, req(
                    ApiKey.INIT_PRODUCER_ID, transactional_id=probe, transaction_timeout_ms=60000))).error_code:
                await trio.sleep(0.05)
    return await oracle.call(ApiKey.INIT_PRODUCER_ID, 4, req(ApiKey.INIT_PRODUCER_ID, transactional_id=transactional_id,
                                                             transaction_timeout_ms=60000))


def now_ms() -> int:
    return int(time.time() * 1000)


# --- Produce --------------------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(P))
async def test_produce(oracle, request, version):
    name, alias = await topic_with_records(oracle, request, records=0)
    body = lambda parts, **kw: produce_body(version, name, alias, parts, **kw)       # noqa: E731
    await oracle.call(P, version, body({0: batch([b"a", b"b"])}, acks=-1), what="acks=-1")
    # Kafka answers partitions in the order of a hash map keyed by topic id: compared as sets
    await oracle.call(P, version, body({0: batch([b"c"]), 1: batch([b"d"])}, acks=1), what="acks=1, two partitions",
                      unordered=("partition_responses",))
    await oracle.call(P, version, body({7: batch([b"e"])}), what="a partition the topic does not have")
    await oracle.call(P, version, body({0: batch([b"f"])}, acks=2), what="acks=2")
    await oracle.call(P, version, body({0: b""}), what="no records")
    # Not compared: null records. Kafka 4.3.1 never answers them (its append fails on the null);
    # groupbroker answers INVALID_RECORD, as for an empty set.
    await oracle.call(P, version, body({0: batch([b"g"]) + batch([b"h"])}), what="two batches")
    corrupt = bytearray(batch([b"i"]))
    corrupt[-1] ^= 0xFF
    await oracle.call(P, version, body({0: bytes(corrupt)}), what="a batch failing its CRC")
    await oracle.call(P, version, body({0: batch([b"j"], transactional=True, producer_id=1, epoch=0, sequence=0)}),
                      what="a transactional batch without a transactional id")
    unknown = produce_body(version, name + "-unknown", UNKNOWN_ID, {0: batch([b"k"])})
    await oracle.call(P, version, unknown, what="an unknown topic")


@pytest.mark.parametrize("version", versions(P))
async def test_produce_refused_records(oracle, request, version):
    name, alias = await topic_with_records(oracle, request, records=0, configs=[
        ("cleanup.policy", "compact"), ("max.message.bytes", "200"),
        ("message.timestamp.before.max.ms", "3600000")])
    body = lambda parts: produce_body(version, name, alias, parts)       # noqa: E731
    now = now_ms()
    await oracle.call(P, version, body({0: batch([b"a", b"b", b"c"], keys=[b"k", None, None], timestamp=now)}),
                      what="records without a key in a compacted topic")
    await oracle.call(P, version, body({0: batch([b"x" * 300], keys=[b"k"], timestamp=now)}),
                      what="a batch over max.message.bytes")
    for what, timestamp in (("a timestamp too far in the past", 1000), ("too far in the future", TS * 10)):
        answers = await oracle.both(P, version, body({0: batch([b"a"], keys=[b"k"], timestamp=timestamp)}))
        # the accepted range in the message is the broker's clock at the moment: left out
        oracle.compare(P, version, *(without_clock(a) for a in answers), what=what)


def without_clock(answer):
    """A Produce answer with the time range its timestamp errors quote cut off."""
    def cut(e):
        return dataclasses.replace(e, batch_index_error_message=e.batch_index_error_message.split(" The timestamp")[0])
    return dataclasses.replace(answer, responses=tuple(
        dataclasses.replace(t, partition_responses=tuple(
            dataclasses.replace(p, record_errors=tuple(cut(e) for e in p.record_errors))
            for p in t.partition_responses)) for t in answer.responses))


# --- Fetch ----------------------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(F))
async def test_fetch(oracle, request, version):
    name, alias = await topic_with_records(oracle, request)
    t = (name, alias)
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}), what="from the start")
    await oracle.call(F, version, fetch_body(version, {t: {0: 1, 1: 0}}), what="from the middle, and an empty partition")
    await oracle.call(F, version, fetch_body(version, {t: {0: 3}}), what="at the log end")
    await oracle.call(F, version, fetch_body(version, {t: {0: 4}}), what="past the log end")
    await oracle.call(F, version, fetch_body(version, {t: {0: -1}}), what="offset -1")
    await oracle.call(F, version, fetch_body(version, {t: {5: 0}}), what="a partition the topic does not have")
    await oracle.call(F, version, fetch_body(version, {(name + "-unknown", UNKNOWN_ID): {0: 0}}),
                      what="an unknown topic")
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}, max_bytes=10), what="max_bytes below a batch")


@pytest.mark.parametrize("version", [v for v in versions(F) if v >= 7])
async def test_fetch_sessions(oracle, request, version):
    name, alias = await topic_with_records(oracle, request)
    t = (name, alias)
    first = await oracle.call(F, version, fetch_body(version, {t: {0: 0, 1: 0}}, epoch=0), what="a new session")
    session = Alias(first["session_id"]) if first["session_id"] else 0
    await oracle.call(F, version, fetch_body(version, {}, session_id=session, epoch=1),
                      what="incremental: nothing changed")
    await oracle.call(P, 9, produce_body(9, name, alias, {1: batch([b"new"])}))
    await oracle.call(F, version, fetch_body(version, {}, session_id=session, epoch=2),
                      what="incremental: partition 1 has a record")
    await oracle.call(F, version, fetch_body(version, {t: {1: 1}}, session_id=session, epoch=3),
                      what="incremental: partition 1 moves on")
    await oracle.call(F, version, fetch_body(version, {}, session_id=session, epoch=7), what="a wrong epoch")
    await oracle.call(F, version, fetch_body(version, {}, session_id=123456, epoch=1), what="an unknown session")
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}, session_id=session, epoch=-1),
                      what="the session closed by a full fetch")
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}, epoch=-1), what="sessionless")


@pytest.mark.parametrize("version", versions(F))
async def test_fetch_read_committed(oracle, request, version):
    name, alias = await topic_with_records(oracle, request, records=1)
    txn = unique(request, "-txn")
    init = await init_producer(oracle, txn)
    producer, epoch = Alias(init["producer_id"]), init["producer_epoch"]
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, req(
        ApiKey.ADD_PARTITIONS_TO_TXN, v3_and_below_transactional_id=txn, v3_and_below_producer_id=producer,
        v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
            sub(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopic", name=name, partitions=(0,)),)))
    answers = []
    for side in oracle.sides:
        data = batch([b"t1", b"t2"], producer_id=side.resolve(producer), epoch=epoch, sequence=0, transactional=True)
        answers.append(await side.client.call(P, 9, produce_body(9, name, None, {0: data}, transactional_id=txn)))
    oracle.compare(P, 9, *answers, what="a transactional batch")
    t = (name, alias)
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}), what="read_uncommitted, transaction open")
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}, isolation=1), what="read_committed, transaction open")
    await oracle.call(ApiKey.END_TXN, 3, req(ApiKey.END_TXN, transactional_id=txn, producer_id=producer,
                                             producer_epoch=epoch, committed=False))
    await _until_stable(oracle, name)
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}, isolation=1), what="read_committed, aborted")
    await oracle.call(F, version, fetch_body(version, {t: {0: 0}}), what="read_uncommitted, aborted")


async def _until_stable(oracle, name, end=4):
    """Both brokers' last stable offset in partition 0 reaches ``end`` (the abort marker is
    written)."""
    body = req(LO, replica_id=-1, isolation_level=1, topics=(sub(LO, "ListOffsetsTopic", name=name, partitions=(
        sub(LO, "ListOffsetsPartition", partition_index=0, timestamp=-1),)),))
    with trio.fail_after(10):
        for side in oracle.sides:
            while (await side.client.call(LO, 5, body)).topics[0].partitions[0].offset < end:
                await trio.sleep(0.02)


# --- ListOffsets ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(LO))
async def test_list_offsets(oracle, request, version):
    name, alias = await topic_with_records(oracle, request)

    def ask(*timestamps, partition=0, topic=name, isolation=0, epoch=-1):
        return req(LO, replica_id=-1, isolation_level=isolation, timeout_ms=1000, topics=(
            sub(LO, "ListOffsetsTopic", name=topic, partitions=tuple(
                sub(LO, "ListOffsetsPartition", partition_index=partition, timestamp=ts, current_leader_epoch=epoch)
                for ts in timestamps)),))
    # one partition per request below v1 ... Kafka answers each (partition, timestamp) pair
    for what, ts in (("latest", -1), ("earliest", -2), ("max timestamp", -3), ("earliest local", -4),
                     ("latest tiered", -5), ("earliest pending upload", -6), ("an unknown special", -7),
                     ("by timestamp", TS + 1), ("before every record", 0), ("after every record", TS + 100)):
        await oracle.call(LO, version, ask(ts), what=what)
    await oracle.call(LO, version, ask(-1, partition=1), what="latest of an empty partition")
    await oracle.call(LO, version, ask(-3, partition=1), what="max timestamp of an empty partition")
    await oracle.call(LO, version, ask(-1, partition=9), what="a partition the topic does not have")
    await oracle.call(LO, version, ask(-1, topic=name + "-unknown"), what="an unknown topic")
    if version >= 2:
        await oracle.call(LO, version, ask(-1, isolation=1), what="latest, read_committed")
    if version >= 4:
        await oracle.call(LO, version, ask(-1, epoch=0), what="the current leader epoch")
        await oracle.call(LO, version, ask(-1, epoch=3), what="a leader epoch from the future")


# --- DeleteRecords --------------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(DR))
async def test_delete_records(oracle, request, version):
    name, alias = await topic_with_records(oracle, request, records=5)

    def delete(*parts, topic=name):
        return req(DR, timeout_ms=30000, topics=(sub(DR, "DeleteRecordsTopic", name=topic, partitions=tuple(
            sub(DR, "DeleteRecordsPartition", partition_index=p, offset=o) for p, o in parts)),))
    await oracle.call(DR, version, delete((0, 2)), what="before offset 2")
    await oracle.call(DR, version, delete((0, 1)), what="before an offset already deleted")
    await oracle.call(DR, version, delete((0, 9)), what="past the high watermark")
    await oracle.call(DR, version, delete((0, -5)), what="a negative offset")
    # Kafka answers partitions in the order of a hash map keyed by topic id: compared as sets
    await oracle.call(DR, version, delete((0, -1), (1, -1)), what="up to the high watermark",
                      unordered=("partitions",))
    await oracle.call(DR, version, delete((4, 0)), what="a partition the topic does not have")
    await oracle.call(DR, version, delete((0, 0), topic=name + "-unknown"), what="an unknown topic")
    await oracle.call(F, 12, fetch_body(12, {(name, alias): {0: 0}}), what="fetch below the log start")


# --- OffsetForLeaderEpoch -------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(OLE))
async def test_offset_for_leader_epoch(oracle, request, version):
    name, alias = await topic_with_records(oracle, request)

    def ask(*parts, topic=name):
        return req(OLE, replica_id=-1, topics=(sub(OLE, "OffsetForLeaderTopic", topic=topic, partitions=tuple(
            sub(OLE, "OffsetForLeaderPartition", partition=p, leader_epoch=e, current_leader_epoch=c)
            for p, e, c in parts)),))
    await oracle.call(OLE, version, ask((0, 0, -1), (1, 0, -1)), what="epoch 0")
    await oracle.call(OLE, version, ask((0, -1, -1)), what="an undefined epoch")
    await oracle.call(OLE, version, ask((0, 4, -1)), what="an epoch from the future")
    await oracle.call(OLE, version, ask((0, 0, 0)), what="the current leader epoch given")
    await oracle.call(OLE, version, ask((0, 0, 2)), what="a current leader epoch from the future")
    await oracle.call(OLE, version, ask((6, 0, -1)), what="a partition the topic does not have")
    await oracle.call(OLE, version, ask((0, 0, -1), topic=name + "-unknown"), what="an unknown topic")


# --- DescribeProducers ----------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(DP))
async def test_describe_producers(oracle, request, version):
    name, alias = await topic_with_records(oracle, request, records=0)

    def ask(*partitions, topic=name):
        return req(DP, topics=(sub(DP, "TopicRequest", name=topic, partition_indexes=partitions),))
    await oracle.call(DP, version, ask(0), what="no producers")
    init = await init_producer(oracle, None)
    producer = Alias(init["producer_id"])
    answers = []
    for side in oracle.sides:
        data = batch([b"i1", b"i2"], producer_id=side.resolve(producer), epoch=0, sequence=0, timestamp=TS)
        answers.append(await side.client.call(P, 9, produce_body(9, name, None, {0: data})))
    oracle.compare(P, 9, *answers, what="an idempotent batch")
    answer = await oracle.both(DP, version, ask(0, 1, 5))
    oracle.compare(DP, version, *answer, what="an idempotent producer, an empty and an unknown partition")
    await oracle.call(DP, version, ask(0, topic=name + "-unknown"), what="an unknown topic")


# --- WriteTxnMarkers ------------------------------------------------------------------------

WTM = ApiKey.WRITE_TXN_MARKERS


def markers(*entries):
    return req(WTM, markers=tuple(entries))


def marker(producer, epoch: int, topics: dict, *, commit=False, coordinator_epoch=0, transaction_version=0):
    return sub(WTM, "WritableTxnMarker", producer_id=producer, producer_epoch=epoch, transaction_result=commit,
               coordinator_epoch=coordinator_epoch, transaction_version=transaction_version, topics=tuple(
                   sub(WTM, "WritableTxnMarkerTopic", name=name, partition_indexes=tuple(parts))
                   for name, parts in topics.items()))


def described_producers(answers):
    """DescribeProducers answers with the markers' timestamps (each broker's clock) cut off."""
    return [dataclasses.replace(a, topics=tuple(dataclasses.replace(t, partitions=tuple(
        dataclasses.replace(p, active_producers=tuple(dataclasses.replace(s, last_timestamp=0)
                                                      for s in p.active_producers))
        for p in t.partitions)) for t in a.topics)) for a in answers]


async def open_transaction(oracle, txn: str, name: str, partitions=(0, 1)):
    """InitProducerId, AddPartitionsToTxn (v3: a version-1 transaction on both) and a
    transactional batch in each of ``partitions``: (producer alias, epoch)."""
    init = await init_producer(oracle, txn)
    producer, epoch = Alias(init["producer_id"]), init["producer_epoch"]
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, req(
        ApiKey.ADD_PARTITIONS_TO_TXN, v3_and_below_transactional_id=txn, v3_and_below_producer_id=producer,
        v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
            sub(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopic", name=name, partitions=partitions),)))
    answers = []
    for side in oracle.sides:
        data = batch([b"t1", b"t2"], producer_id=side.resolve(producer), epoch=epoch, sequence=0, transactional=True)
        answers.append(await side.client.call(P, 9, produce_body(9, name, None, {p: data for p in partitions},
                                                                 transactional_id=txn)))
    oracle.compare(P, 9, *answers, what="a transactional batch in each partition", unordered=("partition_responses",))
    return producer, epoch


async def _until_ended(oracle, txn: str):
    """Kafka's coordinator has written its markers and completed the transaction (ours has
    before it answers EndTxn)."""
    body = req(ApiKey.DESCRIBE_TRANSACTIONS, transactional_ids=(txn,))
    with trio.fail_after(10):
        while (await oracle.kafka.client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, body)).transaction_states[0] \
                .transaction_state != "CompleteAbort":
            await trio.sleep(0.02)


@pytest.mark.parametrize("version", versions(WTM))
async def test_write_txn_markers(oracle, request, version):
    """What Admin.abortTransaction (``kafka-transactions abort``) sends: an open transaction ended
    by hand, each refusal of a partition leader in Kafka's order (no replica, an older producer
    epoch, an older coordinator epoch, a transaction-version-2 marker of the open epoch, no epoch
    at all), and the answer's grouping of several markers by producer id and topic."""
    name, alias = await topic_with_records(oracle, request, partitions=3, records=0)
    other = unique(request, "-other")
    await create_topic(oracle, other, partitions=2)
    txn = unique(request, "-txn")
    # a first transaction, aborted; the next InitProducerId bumps the epoch, and a second opens
    first, _ = await open_transaction(oracle, txn, name)
    await oracle.call(ApiKey.END_TXN, 3, req(ApiKey.END_TXN, transactional_id=txn, producer_id=first,
                                             producer_epoch=0, committed=False))
    await _until_ended(oracle, txn)
    producer, epoch = await open_transaction(oracle, txn, name)
    assert epoch == 1
    if version >= 2:
        await oracle.call(WTM, version, markers(marker(producer, epoch, {name: [0]}, transaction_version=2)),
                          what="transaction version 2: the open transaction's own epoch is stale")
    await oracle.call(WTM, version, markers(marker(producer, epoch - 1, {name: [0]})), what="an older producer epoch")
    # the order of producer ids is their hash's, and the two brokers gave this one different ids
    await oracle.call(WTM, version, markers(marker(producer, -1, {name: [0]}), marker(999_990, 0, {name: [2]})),
                      what="no epoch: the whole request fails", unordered=("markers",))
    await oracle.call(WTM, version, markers(marker(producer, epoch, {name: [0]}, coordinator_epoch=3)),
                      what="the abort, at coordinator epoch 3")
    await oracle.call(WTM, version, markers(marker(producer, epoch, {name: [0]}, coordinator_epoch=2)),
                      what="again, from an older coordinator epoch: fenced")
    await oracle.call(WTM, version, markers(), what="no marker")
    # the markers with nothing to write come first: Kafka never answers a request whose last
    # such marker follows the last that writes (docs/kafka-differences.md)
    await oracle.call(WTM, version, markers(
        marker(999_999, 0, {}),
        marker(999_999, 0, {other: [5]}),
        marker(999_997, 0, {"__consumer_offsets": [9_999]}),
        marker(producer, epoch, {name + "-unknown": [0], name: [7, 1]}, commit=True),
        marker(999_998, 4, {other: [1, 0], name: [2]})),
        what="several markers: an unknown topic and partition, one with no partition, a producer id twice",
        unordered=("markers",))
    await oracle.call(WTM, version, markers(
        marker(999_999, 0, {}),
        marker(999_997, 0, {"__consumer_offsets": [9_999]}),
        marker(999_999, 0, {other: [5], name + "-unknown": [0, 1, 2]}),
        marker(999_998, 4, {other: [1, 0], name: [2], name + "-unknown": [3]})),
        what="the same without the transaction's own producer: in Kafka's order")
    # a marker naming a partition twice is never answered by Kafka (docs/kafka-differences.md)
    twice = await oracle.ours.client.call(WTM, version, markers(marker(999_996, 0, {other: [1, 0, 1]})))
    assert sorted((p.partition_index, p.error_code) for p in twice.markers[0].topics[0].partitions) == [(0, 0), (1, 0)]
    ask = req(DP, topics=(sub(DP, "TopicRequest", name=name, partition_indexes=(0, 1, 2)),))
    oracle.compare(DP, 0, *described_producers(await oracle.both(DP, 0, ask)),
                   what="the producers after the markers (their transactions ended, epochs noted)")
    t = (name, alias)
    await oracle.call(F, 12, fetch_body(12, {t: {0: 0, 1: 0}}, isolation=1), what="read_committed: aborted, committed")
    await oracle.call(ApiKey.END_TXN, 3, req(ApiKey.END_TXN, transactional_id=txn, producer_id=producer,
                                             producer_epoch=epoch, committed=False))
