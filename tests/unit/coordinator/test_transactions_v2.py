"""Transaction version 2 in the coordinator's state machine (EndTxn v5, AddPartitionsToTxn v4+,
the coordinator's own aborts at a finalized transaction.version of 2), on a simulated clock:
the epoch bumped at every end, retries told apart by their epoch, the producer id handed over
once the epoch is exhausted, and the records that carry it across a reload. The wire-level
answers are compared with Kafka's in tests/oracle/test_transactions_v2.py; what Kafka's own
tests cannot reach in a run (32,766 epochs) is driven here."""

from __future__ import annotations

import itertools

import pytest

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.metadata import INT16_MAX, TxnState
from coordinator.transactions.records import decode_record, encode_record
from protocol.errors import ErrorCode as E

S = TxnState
TID = "txn-v2"
T0 = 1_700_000_000_000


class Driver:
    """Carries decisions out as the broker's service does, in transaction version 2."""

    def __init__(self, transaction_version: int = 2):
        ids = itertools.count(1000)
        self.c = TransactionCoordinator(TransactionConfig(), lambda: next(ids), transaction_version)
        self.now = T0
        self.markers: list[tuple] = []

    @property
    def meta(self):
        return self.c.txns[TID]

    def init(self, expected=None):
        d = self.c.init_producer_id(self.now, TID, 60_000, expected)
        if d.fence:
            error, *_ = self.end(self.meta.producer_id, d.transit.producer_epoch, False, from_client=False,
                                 client_tv=self.c.transaction_version)
            return E.CONCURRENT_TRANSACTIONS if error == E.NONE else error, -1, -1
        if d.transit is not None:
            self.c.written(TID, d.transit)
        return d.error, d.producer_id, d.producer_epoch

    def add(self, partitions=(("t", 0),), pid=None, epoch=None):
        d = self.c.add_partitions(self.now, TID, self.meta.producer_id if pid is None else pid,
                                  self.meta.producer_epoch if epoch is None else epoch, partitions, 2)
        if d.transit is not None:
            self.c.written(TID, d.transit)
        return d.error

    def end(self, pid=None, epoch=None, commit=True, *, from_client=True, client_tv=2, hold=False):
        """(error, producer id, epoch) as EndTxn v5 answers; markers noted as (pid, epoch, tv)."""
        pid = self.meta.producer_id if pid is None else pid
        epoch = self.meta.producer_epoch if epoch is None else epoch
        d = self.c.end_transaction(self.now, TID, pid, epoch, commit, from_client=from_client, client_tv=client_tv)
        if d.transit is None:
            return d.error, d.producer_id, d.producer_epoch
        self.c.written(TID, d.transit)
        self.markers.append((self.meta.producer_id, self.meta.producer_epoch, self.meta.client_tv))
        complete = self.c.markers_begin(self.now, TID)
        self.held = complete
        if not hold:
            self.c.written(TID, complete)
        return E.NONE, complete.producer_id, complete.producer_epoch


def started(epoch: int = 0) -> Driver:
    d = Driver()
    d.init()
    d.meta.producer_epoch = epoch
    return d


def test_a_commit_bumps_the_epoch_and_its_markers_carry_the_bump():
    d = started()
    assert d.add() == E.NONE and d.meta.client_tv == 2
    assert d.end() == (E.NONE, 1000, 1)
    assert d.markers == [(1000, 1, 2)]
    assert (d.meta.state, d.meta.producer_epoch, d.meta.last_producer_epoch) == (S.COMPLETE_COMMIT, 1, 0)


def test_a_retried_end_gets_the_current_epoch_back():
    d = started()
    d.add()
    d.end()
    assert d.end(epoch=0) == (E.NONE, 1000, 1)                      # the same commit again
    assert d.end(epoch=0, commit=False) == (E.INVALID_TXN_STATE, -1, -1)
    assert len(d.markers) == 1


@pytest.mark.parametrize("state_from, commit, epoch_delta, expected", [
    # Kafka's table: rows Empty, CompleteAbort, CompleteCommit; retry = the epoch before
    ("empty", False, -1, E.PRODUCER_FENCED), ("empty", False, 0, "bump"),
    ("empty", True, -1, E.PRODUCER_FENCED), ("empty", True, 0, E.INVALID_TXN_STATE),
    ("aborted", False, -1, E.NONE), ("aborted", False, 0, "bump"),
    ("aborted", True, -1, E.INVALID_TXN_STATE), ("aborted", True, 0, E.INVALID_TXN_STATE),
    ("committed", False, -1, E.INVALID_TXN_STATE), ("committed", False, 0, "bump"),
    ("committed", True, -1, E.NONE), ("committed", True, 0, E.INVALID_TXN_STATE),
])
def test_ends_with_nothing_open(state_from, commit, epoch_delta, expected):
    d = started(epoch=5)
    if state_from != "empty":
        d.add()
        d.end(commit=state_from == "committed")
    current = d.meta.producer_epoch
    error, pid, epoch = d.end(epoch=current + epoch_delta, commit=commit)
    if expected == "bump":
        assert (error, epoch, d.meta.state) == (E.NONE, current + 1, S.COMPLETE_ABORT)
        assert d.markers[-1] == (1000, current + 1, 2)
    else:
        assert error == expected
        assert d.meta.producer_epoch == current


def test_an_exhausted_epoch_hands_over_a_new_producer_id():
    d = started(epoch=INT16_MAX - 1)
    d.add()
    assert d.end(hold=True) == (E.NONE, 1001, 0)
    assert d.markers == [(1000, INT16_MAX, 2)]                      # the old id, at the highest epoch
    assert d.add(pid=1001, epoch=0) == E.CONCURRENT_TRANSACTIONS    # the new id is still pending
    d.c.written(TID, d.held)
    assert (d.meta.producer_id, d.meta.producer_epoch, d.meta.previous_producer_id) == (1001, 0, 1000)
    assert d.end(pid=1000, epoch=INT16_MAX - 1) == (E.NONE, 1001, 0)   # a retry across the overflow
    assert d.add(pid=1001, epoch=0) == E.NONE
    assert d.end(pid=1000, epoch=INT16_MAX - 1) == (E.INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert d.end() == (E.NONE, 1001, 1)


def test_a_fence_aborts_with_one_bump_in_version_2():
    d = started(epoch=3)
    d.add()
    assert d.init()[0] == E.CONCURRENT_TRANSACTIONS
    assert d.markers == [(1000, 4, 2)] and d.meta.producer_epoch == 4
    assert d.end(epoch=3, commit=False) == (E.NONE, 1000, 4)        # the fenced producer's abort: a retry
    assert d.init() == (E.NONE, 1000, 5)
    assert d.end(epoch=3, commit=False)[0] == E.PRODUCER_FENCED


def test_a_fence_aborts_without_a_bump_in_version_1():
    d = Driver(transaction_version=1)
    d.init()
    d.add()
    assert d.init()[0] == E.CONCURRENT_TRANSACTIONS
    assert d.markers == [(1000, 1, 0)] and d.meta.client_tv == 0


def test_a_timed_out_transaction_is_aborted_in_the_finalized_version():
    d = started(epoch=7)
    d.add()
    d.now += 61_000
    [(tid, pid, fenced)] = d.c.timed_out(d.now)
    assert d.end(pid, fenced, False, from_client=False, client_tv=d.c.transaction_version) == (E.NONE, 1000, 8)
    assert d.end(epoch=7, commit=False) == (E.NONE, 1000, 8)        # the producer's own abort, late
    assert d.end(epoch=7, commit=True)[0] == E.INVALID_TXN_STATE


def test_version_1_and_2_ends_mix_on_one_id():
    d = started(epoch=2)
    d.add()
    assert d.end(client_tv=0) == (E.NONE, 1000, 2)                  # EndTxn v4: no bump
    assert d.markers[-1] == (1000, 2, 0)
    d.add()
    assert d.end() == (E.NONE, 1000, 3)
    assert d.markers[-1] == (1000, 3, 2)


def test_the_highest_epoch_aborts_without_overflowing(caplog):
    d = started(epoch=INT16_MAX)
    d.meta.state = S.ONGOING
    assert d.end(commit=False, hold=True)[0] == E.NONE
    assert d.markers == [(1000, INT16_MAX, 2)]
    assert "a bug" in caplog.text


@pytest.mark.parametrize("version, kept", [(2, True), (1, True), (0, False)])
def test_records_keep_what_version_2_needs_from_level_1(version, kept):
    """A PrepareCommit over an exhausted epoch, written and read back: from transaction.version 1
    the value is v1 and keeps the next producer id and the client's version (a reload completes
    it with the new id); at level 0 it is v0, without them."""
    d = started(epoch=INT16_MAX - 1)
    d.add()
    d.end(hold=True)
    prepared = d.meta.as_transit()
    tid, back = decode_record(encode_record(TID, prepared, version))
    assert tid == TID and back.state == S.PREPARE_COMMIT and back.producer_epoch == INT16_MAX
    assert (back.next_producer_id, back.client_tv) == ((1001, 2) if kept else (-1, 0))
    assert back.previous_producer_id == (1000 if kept else -1)
