"""Transactions as a version-1 client drives them, against Apache Kafka: InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, DescribeTransactions and
ListTransactions at every version we serve, with the fencing and state errors in Kafka's order.

Kafka is formatted with transaction version 2 (its default); at the request versions a TV1
client sends (AddPartitionsToTxn up to v3, EndTxn and TxnOffsetCommit up to v4) its coordinator
runs version 1. Version 2's requests are test_transactions_v2.py's.
"""

import dataclasses
import re

import pytest
import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.registry import API_TABLE
from tests.oracle.steps import batch, create_topic, produce_body, req, stable_member, sub, unique, versions
from tests.support.differential import Alias

#: the newest versions a transaction version 1 client sends
TV1_LAST = {ApiKey.ADD_PARTITIONS_TO_TXN: 3, ApiKey.END_TXN: 4, ApiKey.TXN_OFFSET_COMMIT: 4}


def tv1_versions(api: ApiKey) -> range:
    return range(versions(api).start, TV1_LAST[api] + 1)


def init(txn: str | None, timeout_ms: int = 60000, producer_id=-1, epoch=-1):
    return req(ApiKey.INIT_PRODUCER_ID, transactional_id=txn, transaction_timeout_ms=timeout_ms,
               producer_id=producer_id, producer_epoch=epoch)


def add_partitions(txn: str, pid, epoch: int, topic: str, partitions=(0,)):
    return req(ApiKey.ADD_PARTITIONS_TO_TXN, v3_and_below_transactional_id=txn, v3_and_below_producer_id=pid,
               v3_and_below_producer_epoch=epoch, v3_and_below_topics=(
                   sub(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopic", name=topic,
                       partitions=tuple(partitions)),))


def end(txn: str, pid, epoch: int, commit: bool = True):
    return req(ApiKey.END_TXN, transactional_id=txn, producer_id=pid, producer_epoch=epoch, committed=commit)


async def begun(oracle, txn: str, topic: str, version: int = 4) -> tuple[Alias, int]:
    started = await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(txn))
    assert started["error_code"] == ErrorCode.NONE, started
    return Alias(started["producer_id"]), started["producer_epoch"]


async def described(oracle, txn: str, settled: str | None = None):
    """DescribeTransactions of ``txn`` compared, once Kafka's state is ``settled`` (its markers
    are written after EndTxn is answered; ours before)."""
    body = req(ApiKey.DESCRIBE_TRANSACTIONS, transactional_ids=(txn,))
    with trio.fail_after(10):
        while settled is not None:
            _, kafka = await oracle.both(ApiKey.DESCRIBE_TRANSACTIONS, 0, body)
            if kafka.transaction_states[0].transaction_state == settled:
                break
            await trio.sleep(0.05)
    return await oracle.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, body)


@pytest.mark.parametrize("version", versions(ApiKey.INIT_PRODUCER_ID))
async def test_init_producer_id(oracle, request, version):
    txn = unique(request)
    await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(None), what="an idempotent producer")
    await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(txn, timeout_ms=0), what="timeout 0")
    await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(txn, timeout_ms=10_000_000),
                      what="a timeout above transaction.max.timeout.ms")
    await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(""), what="an empty transactional id")
    first = await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(txn))
    again = await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(txn), what="again: the epoch is bumped")
    if version >= 3:
        await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(
            txn, producer_id=Alias(first["producer_id"]), epoch=first["producer_epoch"]),
            what="with an old epoch: fenced")
        await oracle.call(ApiKey.INIT_PRODUCER_ID, version, init(
            txn, producer_id=Alias(again["producer_id"]), epoch=again["producer_epoch"]),
            what="with the current epoch")
    await described(oracle, txn)


@pytest.mark.parametrize("version", tv1_versions(ApiKey.ADD_PARTITIONS_TO_TXN))
async def test_add_partitions_and_end(oracle, request, version):
    txn, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 2)
    pid, epoch = await begun(oracle, txn, topic)
    await oracle.call(ApiKey.END_TXN, 3, end(txn, pid, epoch), what="EndTxn with no transaction")
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn, pid, epoch + 1, topic),
                      what="a newer epoch")
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn, 999_999, epoch, topic),
                      what="a producer id neither broker gave")
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn + "-none", pid, epoch, topic),
                      what="an unknown transactional id")
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn, pid, epoch, topic, (0, 7)),
                      what="a partition that does not exist")
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn, pid, epoch, "no-such-topic-x"),
                      what="a topic that does not exist")
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn, pid, epoch, topic, (0, 1)))
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, add_partitions(txn, pid, epoch, topic, (1,)),
                      what="a partition already added")
    await described(oracle, txn)
    await oracle.call(ApiKey.END_TXN, 3, end(txn, pid, epoch - 1 if epoch else 5), what="a stale epoch")
    await oracle.call(ApiKey.END_TXN, 3, end(txn, pid, epoch, commit=False), what="abort")
    await described(oracle, txn, settled="CompleteAbort")
    await oracle.call(ApiKey.END_TXN, 3, end(txn, pid, epoch, commit=True), what="commit after the abort")


@pytest.mark.parametrize("version", tv1_versions(ApiKey.END_TXN))
async def test_a_transaction_commits(oracle, request, version):
    txn, topic, group = unique(request), unique(request, "-t"), unique(request, "-g")
    await create_topic(oracle, topic, 1)
    pid, epoch = await begun(oracle, txn, topic)
    await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, add_partitions(txn, pid, epoch, topic))
    for side in oracle.sides:              # each broker's own producer id goes into the batch
        records = batch([b"a", b"b"], producer_id=side.resolve(pid), epoch=epoch, sequence=0, transactional=True)
        answer = await side.client.call(ApiKey.PRODUCE, 9, produce_body(topic, 0, records, transactional_id=txn))
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE, (side.name, answer)
    await oracle.call(ApiKey.ADD_OFFSETS_TO_TXN, min(version, API_TABLE[ApiKey.ADD_OFFSETS_TO_TXN].max_version),
                      req(ApiKey.ADD_OFFSETS_TO_TXN, transactional_id=txn, producer_id=pid, producer_epoch=epoch,
                          group_id=group))
    txn_commit_version = min(version, TV1_LAST[ApiKey.TXN_OFFSET_COMMIT])
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, txn_commit_version, req(
        ApiKey.TXN_OFFSET_COMMIT, transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch,
        topics=(sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestTopic", name=topic, partitions=(
            sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestPartition", partition_index=0, committed_offset=2,
                committed_metadata=""),
            sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestPartition", partition_index=3, committed_offset=2,
                committed_metadata=""))),)))
    await oracle.call(ApiKey.OFFSET_FETCH, 7, req(ApiKey.OFFSET_FETCH, group_id=group, require_stable=True, topics=(
        sub(ApiKey.OFFSET_FETCH, "OffsetFetchRequestTopic", name=topic, partition_indexes=(0,)),)),
        what="a pending transactional offset, require_stable")
    await oracle.call(ApiKey.END_TXN, version, end(txn, pid, epoch), what="commit")
    await described(oracle, txn, settled="CompleteCommit")
    await listed(oracle, txn)


async def listed(oracle, txn: str) -> None:
    """ListTransactions at every version: filtered to ``txn`` (other tests' transactions are
    there too) before v2, by pattern from v2, with state filters Kafka knows and does not."""
    for version in versions(ApiKey.LIST_TRANSACTIONS):
        body = req(ApiKey.LIST_TRANSACTIONS, state_filters=("CompleteCommit", "NoSuchState"))
        ours, kafka = await oracle.both(ApiKey.LIST_TRANSACTIONS, version, body)
        oracle.compare(ApiKey.LIST_TRANSACTIONS, version, *(dataclasses.replace(answer, transaction_states=tuple(
            t for t in answer.transaction_states if t.transactional_id == txn)) for answer in (ours, kafka)),
            what="state filters")
        if version >= 2:
            for pattern in (re.escape(txn), "(unclosed"):
                await oracle.call(ApiKey.LIST_TRANSACTIONS, version, req(
                    ApiKey.LIST_TRANSACTIONS, transactional_id_pattern=pattern), what=f"pattern {pattern}")


@pytest.mark.parametrize("version", tv1_versions(ApiKey.TXN_OFFSET_COMMIT))
async def test_txn_offset_commit_errors(oracle, request, version):
    txn, topic, group = unique(request), unique(request, "-t"), unique(request, "-g")
    await create_topic(oracle, topic, 1)
    pid, epoch = await begun(oracle, txn, topic)

    def commit(**fields):
        base = dict(transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch, topics=(
            sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestTopic", name=topic, partitions=(
                sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestPartition", partition_index=0,
                    committed_offset=1, committed_metadata=None),)),))
        return req(ApiKey.TXN_OFFSET_COMMIT, **{**base, **fields})
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, version, commit(), what="before AddOffsetsToTxn")
    await oracle.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, req(ApiKey.ADD_OFFSETS_TO_TXN, transactional_id=txn,
                                                        producer_id=pid, producer_epoch=epoch, group_id=group))
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, version, commit(producer_epoch=epoch + 1), what="another epoch")
    if version >= 3:
        member, generation = await stable_member(oracle, group)
        await oracle.call(ApiKey.TXN_OFFSET_COMMIT, version, commit(generation_id=generation + 1, member_id=member),
                          what="a stale generation")
        await oracle.call(ApiKey.TXN_OFFSET_COMMIT, version, commit(generation_id=generation, member_id="stranger"),
                          what="an unknown member")
        await oracle.call(ApiKey.TXN_OFFSET_COMMIT, version, commit(generation_id=generation, member_id=member),
                          what="the current generation")
    await oracle.call(ApiKey.END_TXN, 3, end(txn, pid, epoch, commit=False), what="abort")
    await described(oracle, txn, settled="CompleteAbort")
