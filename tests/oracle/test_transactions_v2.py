"""Transaction version 2 (KIP-890 part 2) as a Kafka 4 client drives it, against Apache Kafka
(formatted with transaction.version=2, its default): Produce v12 and TxnOffsetCommit v5 adding
their partitions themselves, EndTxn v5 bumping the epoch at every commit and abort (and telling
a retry apart by its epoch), AddPartitionsToTxn v4/v5 as brokers send it, and the coordinator's
own abort of a fenced transaction, every answer compared field by field.
"""

import dataclasses

import pytest

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from tests.oracle.steps import batch, create_topic, produce_body, req, stable_member, sub, unique
from tests.oracle.test_transactions import begun, described, end, init, listed

E = ErrorCode


async def produce(oracle, txn: str, topic: str, partition: int, pid, epoch: int, sequence: int, values, *,
                  what: str = "") -> dict:
    """A transactional Produce v12 from each broker's own producer id, the answers compared."""
    answers = []
    for side in oracle.sides:
        records = batch(values, producer_id=side.resolve(pid), epoch=epoch, sequence=sequence, transactional=True)
        answers.append(await side.client.call(ApiKey.PRODUCE, 12, produce_body(topic, partition, records,
                                                                                transactional_id=txn)))
    return oracle.compare(ApiKey.PRODUCE, 12, *answers, what=what)


def error_of(produced: dict) -> int:
    return produced["responses"][0]["partition_responses"][0]["error_code"]


def offsets(txn: str, group: str, topic: str, pid, epoch: int, offset: int = 1):
    return req(ApiKey.TXN_OFFSET_COMMIT, transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch,
               topics=(sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestTopic", name=topic, partitions=(
                   sub(ApiKey.TXN_OFFSET_COMMIT, "TxnOffsetCommitRequestPartition", partition_index=0,
                       committed_offset=offset, committed_metadata=""),)),))


def transaction(txn: str, pid, epoch: int, topic: str, partitions, verify_only: bool):
    """One transaction of a broker's AddPartitionsToTxn (v4+)."""
    return sub(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTransaction", transactional_id=txn, producer_id=pid,
               producer_epoch=epoch, verify_only=verify_only, topics=(
                   sub(ApiKey.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxnTopic", name=topic,
                       partitions=tuple(partitions)),))


async def test_a_transaction_of_version_2(oracle, request):
    """Produce adds its partitions, TxnOffsetCommit v5 the group's, EndTxn v5 commits with the
    next epoch in its answer; a retry gets the same answer, a commit with nothing open is
    refused, an abort with nothing open bumps the epoch again; the old epoch is fenced."""
    txn, topic, group = unique(request), unique(request, "-t"), unique(request, "-g")
    await create_topic(oracle, topic, 2)
    pid, epoch = await begun(oracle, txn, topic, version=5)
    assert error_of(await produce(oracle, txn, topic, 0, pid, epoch, 0, [b"a", b"b"],
                                  what="Produce v12 adds its partition")) == E.NONE
    await described(oracle, txn)
    await produce(oracle, txn, topic, 0, pid, epoch, 2, [b"c"], what="the partition already in the transaction")
    await produce(oracle, txn, topic, 1, pid, epoch, 0, [b"d"], what="a second partition")
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, offsets(txn, group, topic, pid, epoch),
                      what="TxnOffsetCommit v5 adds the group's offsets partition")
    await described(oracle, txn)
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch), what="commit: the answer names the next epoch")
    await described(oracle, txn, settled="CompleteCommit")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch), what="the commit retried")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch, commit=False), what="an abort at the epoch before")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch + 1), what="a commit with nothing open")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch + 1, commit=False),
                      what="an abort with nothing open: the epoch bumped")
    await described(oracle, txn, settled="CompleteAbort")
    await produce(oracle, txn, topic, 0, pid, epoch, 3, [b"e"], what="the first epoch, fenced")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch + 1), what="the epoch before, in CompleteAbort")
    assert error_of(await produce(oracle, txn, topic, 0, pid, epoch + 2, 0, [b"f"],
                                  what="the current epoch starts the next transaction")) == E.NONE
    await oracle.call(ApiKey.END_TXN, 4, end(txn, pid, epoch + 2, commit=False),
                      what="version 1's abort (EndTxn v4): no bump")
    await described(oracle, txn, settled="CompleteAbort")
    await listed(oracle, txn)
    await oracle.call(ApiKey.FETCH, 12, req(ApiKey.FETCH, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                            isolation_level=1, topics=(
        sub(ApiKey.FETCH, "FetchTopic", topic=topic, partitions=tuple(
            sub(ApiKey.FETCH, "FetchPartition", partition=p, fetch_offset=0, partition_max_bytes=1 << 20)
            for p in (0, 1))),)), what="read_committed: the markers at the bumped epochs")


async def test_end_txn_v5_errors(oracle, request):
    """EndTxn v5's checks in Kafka's order, and how it tells a retry from a stale producer."""
    txn, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 1)
    pid, epoch = await begun(oracle, txn, topic, version=5)
    await oracle.call(ApiKey.END_TXN, 5, end(txn + "-none", pid, epoch), what="an unknown transactional id")
    await oracle.call(ApiKey.END_TXN, 5, end("", pid, epoch), what="an empty transactional id")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, 999_999, epoch), what="another producer id")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch + 1), what="a newer epoch")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch), what="a commit with nothing open")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch, commit=False), what="an abort with nothing open")
    await described(oracle, txn, settled="CompleteAbort")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch, commit=False), what="that abort retried")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch), what="a commit at the epoch before")
    await oracle.call(ApiKey.INIT_PRODUCER_ID, 5, init(txn, producer_id=pid, epoch=epoch + 1),
                      what="InitProducerId: the next epoch")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch + 1, commit=False),
                      what="an abort at the epoch before, the id Empty")
    await oracle.call(ApiKey.END_TXN, 3, end(txn, pid, epoch + 1, commit=False), what="the same with EndTxn v3")
    await described(oracle, txn)


async def test_txn_offset_commit_v5_errors(oracle, request):
    """TxnOffsetCommit v5 adds the offsets partition before the group coordinator checks the
    member: a fenced or unknown producer is refused by the add, a stale generation or an
    unknown member by the coordinator after it."""
    txn, topic, group = unique(request), unique(request, "-t"), unique(request, "-g")
    await create_topic(oracle, topic, 1)
    pid, epoch = await begun(oracle, txn, topic, version=5)

    def commit(**fields):
        return dataclasses.replace(offsets(txn, group, topic, pid, epoch), **fields)
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, commit(producer_epoch=epoch + 1), what="another epoch")
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, commit(producer_id=999_999), what="another producer id")
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, commit(transactional_id=txn + "-none"),
                      what="an unknown transactional id")
    member, generation = await stable_member(oracle, group)
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, commit(generation_id=generation + 1, member_id=member),
                      what="a stale generation")
    await described(oracle, txn)
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, commit(generation_id=generation, member_id="stranger"),
                      what="an unknown member")
    await oracle.call(ApiKey.TXN_OFFSET_COMMIT, 5, commit(generation_id=generation, member_id=member),
                      what="the current generation")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch, commit=False), what="abort")
    await described(oracle, txn, settled="CompleteAbort")


@pytest.mark.parametrize("version", [4, 5])
async def test_add_partitions_between_brokers(oracle, request, version):
    """AddPartitionsToTxn as a partition leader sends it: several transactions, each verified
    (verify_only) or added (transaction version 2)."""
    txn, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 2)
    pid, epoch = await begun(oracle, txn, topic, version=5)

    async def call(*transactions, what: str):
        return await oracle.call(ApiKey.ADD_PARTITIONS_TO_TXN, version, req(
            ApiKey.ADD_PARTITIONS_TO_TXN, transactions=transactions), what=what,
            unordered=("results_by_transaction",))      # in the order each transaction is done
    await call(transaction(txn, pid, epoch, topic, (0,), True), what="verified before it was added")
    await call(transaction(txn, pid, epoch, topic, (0, 5), False), what="a partition that does not exist")
    await call(transaction(txn, pid, epoch + 1, topic, (0,), False), what="another epoch")
    await call(transaction(txn, 999_999, epoch, topic, (0,), False), what="another producer id")
    await call(transaction(txn, pid, epoch, topic, (0,), False),
               transaction(txn + "-none", pid, epoch, topic, (1,), True), what="added, and an unknown id verified")
    await described(oracle, txn)
    await call(transaction(txn, pid, epoch, topic, (0, 1), True), what="verified: one in, one not")
    await call(transaction(txn, pid, epoch + 1, topic, (0,), True), what="verified at another epoch")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch, commit=False), what="abort")
    await described(oracle, txn, settled="CompleteAbort")


async def test_a_new_instance_fences_an_open_transaction(oracle, request):
    """InitProducerId finds a transaction open: the coordinator aborts it under version 2 (one
    epoch bump, the markers at it) and the caller retries; the old producer is fenced."""
    txn, topic = unique(request), unique(request, "-t")
    await create_topic(oracle, topic, 1)
    pid, epoch = await begun(oracle, txn, topic, version=5)
    await produce(oracle, txn, topic, 0, pid, epoch, 0, [b"open"], what="a transaction opened")
    await oracle.call(ApiKey.INIT_PRODUCER_ID, 5, init(txn), what="a new instance: told to retry")
    await described(oracle, txn, settled="CompleteAbort")
    await oracle.call(ApiKey.INIT_PRODUCER_ID, 5, init(txn), what="its retry")
    await produce(oracle, txn, topic, 0, pid, epoch, 1, [b"zombie"], what="the old instance's produce")
    await oracle.call(ApiKey.END_TXN, 5, end(txn, pid, epoch, commit=False), what="the old instance's abort")
    await described(oracle, txn)
