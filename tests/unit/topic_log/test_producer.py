"""Idempotent producers: Kafka's duplicate, sequence and epoch rules, and producer-id allocation."""

from __future__ import annotations

import pytest

from topic_log import (InvalidProducerEpoch, OffsetOutOfRange, OutOfOrderSequence, PartitionLog, ProducerIds,
                       InvalidTxnState, TransactionCoordinatorFenced)
from topic_log.producer_state import INT32_MAX, last_sequence
from protocol.errors import ErrorCode
from tests.unit.topic_log.test_batches import batch, values_of


def idem(values, seq, *, pid=7, epoch=0, timestamp=1_000):
    return batch(values, producer_id=pid, epoch=epoch, sequence=seq, timestamp=timestamp)


def test_retried_batch_gets_its_original_offsets_and_is_not_written_twice(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    first = idem([b"a", b"b"], 0)
    assert plog.append(first, 0) == (0, 1, -1)
    assert plog.append(idem([b"c"], 2), 0) == (2, 2, -1)
    assert plog.append(first, 0) == (0, 1, -1)                       # retry of an older batch
    assert plog.high_watermark == 3
    assert [v for _, v in values_of(plog.read(0, 1 << 20))] == [b"a", b"b", b"c"]


def test_only_the_last_five_batches_are_recognised_as_duplicates(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    sent = [idem([b"%d" % i], i) for i in range(6)]
    for b in sent:
        plog.append(b, 0)
    assert plog.append(sent[1], 0) == (1, 1, -1)
    with pytest.raises(OutOfOrderSequence):
        plog.append(sent[0], 0)


def test_sequence_gap_is_out_of_order(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(idem([b"a"], 0), 0)
    with pytest.raises(OutOfOrderSequence) as err:
        plog.append(idem([b"c"], 2), 0)
    assert err.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert plog.high_watermark == 1


def test_epochs_fence_old_producers_and_restart_sequences(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(idem([b"a"], 0, epoch=1), 0)
    with pytest.raises(InvalidProducerEpoch) as err:
        plog.append(idem([b"b"], 1, epoch=0), 0)
    assert err.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(OutOfOrderSequence):
        plog.append(idem([b"b"], 5, epoch=2), 0)                     # a new epoch starts at 0
    assert plog.append(idem([b"b"], 0, epoch=2), 0) == (1, 1, -1)


def test_unknown_producer_may_start_at_any_sequence(tmp_path):
    # Kafka accepts this: the producer's earlier batches may have gone with retention.
    plog = PartitionLog(tmp_path / "t-0")
    assert plog.append(idem([b"a"], 42), 0) == (0, 0, -1)
    assert plog.append(idem([b"b"], 43), 0) == (1, 1, -1)


def test_producers_are_independent_and_plain_batches_unchecked(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(idem([b"a"], 0, pid=1), 0)
    plog.append(idem([b"b"], 0, pid=2), 0)
    plog.append(batch([b"c"]), 0)
    plog.append(batch([b"c"]), 0)                                    # no producer id: no dedup
    assert plog.high_watermark == 4


def test_sequence_state_is_rebuilt_from_the_log_on_reopen(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    first = idem([b"a", b"b"], 0)
    plog.append(first, 0)
    plog.close()
    reopened = PartitionLog(tmp_path / "t-0")
    assert reopened.append(first, 0) == (0, 1, -1)
    with pytest.raises(OutOfOrderSequence):
        reopened.append(idem([b"c"], 3), 0)
    assert reopened.append(idem([b"c"], 2), 0) == (2, 2, -1)


def test_state_of_producers_gone_with_retention_is_forgotten(tmp_path):
    one = len(idem([b"v"], 0))
    plog = PartitionLog(tmp_path / "t-0", segment_bytes=one, retention_bytes=one)
    plog.append(idem([b"a"], 0, pid=1), 0)
    plog.append(idem([b"b"], 0, pid=2), 0)
    plog.apply_retention(0)
    assert plog.producers.entry(1) is None and plog.producers.entry(2) is not None


def _txn_batch(pid: int, seq: int, value: bytes) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                        producer_id=pid, producer_epoch=0, base_sequence=seq,
                                        batch_size=1 << 16)
    builder.append(0, timestamp=1, key=None, value=value, headers=[])
    return bytes(builder.build())


def test_transactions_in_a_partition_and_after_reopening(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(_txn_batch(1, 0, b"a"), 0)              # offset 0: producer 1 opens
    plog.append(idem([b"plain"], 0, pid=9), 0)          # offset 1
    plog.append(_txn_batch(2, 0, b"b"), 0)              # offset 2: producer 2 opens
    assert plog.last_stable_offset == 0 and plog.high_watermark == 3
    assert plog.write_marker(1, 0, False, 0, 5) == 3    # producer 1 aborts
    assert plog.last_stable_offset == 2
    with pytest.raises(InvalidTxnState):                # a plain batch inside its own transaction
        plog.append(idem([b"x"], 1, pid=2), 0)
    plog.write_marker(2, 0, True, 0, 5)
    plog.append(_txn_batch(1, 1, b"c"), 0)              # the marker left producer 1's sequence alone
    assert plog.last_stable_offset == 5 and plog.high_watermark == 6
    assert plog.transactions.aborted_between(0, 6) == [(1, 0, 3)]
    assert plog.transactions.aborted_between(4, 6) == []
    with pytest.raises(OffsetOutOfRange):               # past the log end, whatever the isolation
        plog.read(9, 1000, upto=plog.last_stable_offset)
    plog.close()
    again = PartitionLog(tmp_path / "t-0")
    assert again.last_stable_offset == 5 and again.transactions.aborted == [(1, 0, 3)]
    assert again.transactions.ongoing == {1: 5}


def test_sequences_wrap_at_int32_max():
    assert last_sequence(INT32_MAX - 1, 3) == 1
    assert last_sequence(5, 3) == 8


def test_wrapped_sequence_is_in_order(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(idem([b"a", b"b"], INT32_MAX - 1), 0)
    assert plog.append(idem([b"c"], 0), 0) == (2, 2, -1)


def test_producer_ids_are_never_reused_after_reopen(tmp_path):
    ids = ProducerIds(tmp_path)
    first = [ids.allocate() for _ in range(3)]
    assert first == [0, 1, 2]
    again = ProducerIds(tmp_path)
    later = again.allocate()
    assert later > max(first)
    more = [again.allocate() for _ in range(ProducerIds.BLOCK + 5)]
    assert len({*first, later, *more}) == ProducerIds.BLOCK + 9
    assert ProducerIds(tmp_path).allocate() > later + ProducerIds.BLOCK


def test_a_marker_is_checked_against_the_producers_epochs_as_kafka_checks_it(tmp_path):
    """Epoch older than the producer's: refused; transaction version 2 also refuses the open
    transaction's own epoch, but takes it again once the transaction has ended (a retried
    marker); a coordinator epoch older than the last marker's: fenced. Nothing refused is written."""
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(_txn_batch(1, 0, b"a"), 0)
    with pytest.raises(InvalidProducerEpoch):
        plog.write_marker(1, 0, False, 0, 5, transaction_version=2)
    assert plog.write_marker(1, 0, False, 4, 5) == 1                       # version 1: the same epoch
    assert plog.write_marker(1, 0, False, 4, 5, transaction_version=2) == 2   # ended: a retry
    with pytest.raises(TransactionCoordinatorFenced):
        plog.write_marker(1, 0, False, 3, 5)
    plog.append(_txn_batch(1, 1, b"b"), 0)
    with pytest.raises(InvalidProducerEpoch):
        plog.write_marker(1, -2, False, 4, 5)
    assert plog.high_watermark == 4 and plog.last_stable_offset == 3
