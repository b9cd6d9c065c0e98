"""The transaction coordinator's state machine, request by request, on a simulated clock.

Each case drives :class:`TransactionCoordinator` as the broker's service does (a decision's
transit is written, then applied; an end's markers are written, then the completion) and checks
the error code Kafka gives at that point, in Kafka's order of checks.
"""

from __future__ import annotations

import itertools

import pytest

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.metadata import IllegalTransition, TxnState
from protocol.errors import ErrorCode as E

S = TxnState
TID = "txn-a"
T0 = 1_700_000_000_000


class Driver:
    """Carries decisions out as the broker does, with every write succeeding unless told."""

    def __init__(self, **config):
        ids = itertools.count(1000)
        self.c = TransactionCoordinator(TransactionConfig(**config), lambda: next(ids))
        self.now = T0
        self.markers: list[tuple] = []

    def meta(self, tid=TID):
        return self.c.txns[tid]

    def init(self, tid=TID, timeout=60_000, expected=None, *, fail_write=False):
        d = self.c.init_producer_id(self.now, tid, timeout, expected)
        if d.transit is None:
            return d.error, d.producer_id, d.producer_epoch
        if d.fence:
            meta = self.c.txns[tid]
            err, *_ = self.end(tid, meta.producer_id, d.transit.producer_epoch, False, from_client=False)
            return (err if err != E.NONE else E.CONCURRENT_TRANSACTIONS), -1, -1
        if fail_write:
            self.c.failed(tid, d.transit)
            return E.NOT_COORDINATOR, -1, -1
        self.c.written(tid, d.transit)
        return E.NONE, d.producer_id, d.producer_epoch

    def add(self, partitions, tid=TID, pid=None, epoch=None):
        meta = self.c.txns.get(tid)
        pid = meta.producer_id if pid is None else pid
        epoch = meta.producer_epoch if epoch is None else epoch
        d = self.c.add_partitions(self.now, tid, pid, epoch, partitions)
        if d.transit is not None:
            self.c.written(tid, d.transit)
        return d.error

    def end(self, tid=TID, pid=None, epoch=None, commit=True, *, from_client=True, hold_markers=False):
        meta = self.c.txns.get(tid)
        pid = meta.producer_id if pid is None and meta else pid
        epoch = meta.producer_epoch if epoch is None and meta else epoch
        d = self.c.end_transaction(self.now, tid, pid, epoch, commit, from_client=from_client)
        if d.transit is None:
            return d.error, d.producer_id, d.producer_epoch
        self.c.written(tid, d.transit)
        complete = self.c.markers_begin(self.now, tid)
        self.markers.append((tid, sorted(d.transit.partitions), commit))
        if not hold_markers:
            self.c.written(tid, complete)
        self.held = complete
        return E.NONE, meta.producer_id, meta.producer_epoch

    def release_markers(self, tid=TID):
        self.c.written(tid, self.held)


def test_first_init_gives_a_new_producer_id_at_epoch_0():
    d = Driver()
    assert d.init() == (E.NONE, 1000, 0)
    assert d.meta().state == S.EMPTY


def test_init_again_bumps_the_epoch_and_keeps_the_producer_id():
    d = Driver()
    d.init()
    assert d.init() == (E.NONE, 1000, 1)


@pytest.mark.parametrize("tid,timeout,error", [
    ("", 60_000, E.INVALID_REQUEST),
    (TID, 0, E.INVALID_TRANSACTION_TIMEOUT),
    (TID, 900_001, E.INVALID_TRANSACTION_TIMEOUT),
    (TID, -5, E.INVALID_TRANSACTION_TIMEOUT),
])
def test_init_refusals(tid, timeout, error):
    assert Driver().init(tid, timeout)[0] == error


def test_init_timeout_bound_is_transaction_max_timeout_ms():
    assert Driver(transaction_max_timeout_ms=1000).init(timeout=1000)[0] == E.NONE
    assert Driver(transaction_max_timeout_ms=1000).init(timeout=1001)[0] == E.INVALID_TRANSACTION_TIMEOUT


def test_init_with_an_open_transaction_fences_and_aborts_it():
    d = Driver()
    d.init()
    d.add([("t", 0), ("t", 1)])
    assert d.init() == (E.CONCURRENT_TRANSACTIONS, -1, -1)      # the abort runs meanwhile
    assert d.markers[-1] == (TID, [("t", 0), ("t", 1)], False)
    assert d.meta().state == S.COMPLETE_ABORT and d.meta().producer_epoch == 1
    assert d.init() == (E.NONE, 1000, 2)                        # the retry bumps once more
    # the zombie, still at epoch 0, is fenced everywhere
    assert d.add([("t", 0)], epoch=0) == E.PRODUCER_FENCED
    assert d.end(epoch=0)[0] == E.PRODUCER_FENCED


def test_requests_while_markers_are_written_get_concurrent_transactions():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    assert d.end(hold_markers=True)[0] == E.NONE
    assert d.meta().state == S.PREPARE_COMMIT
    assert d.init()[0] == E.CONCURRENT_TRANSACTIONS
    assert d.add([("t", 1)]) == E.CONCURRENT_TRANSACTIONS
    assert d.end(commit=True)[0] == E.CONCURRENT_TRANSACTIONS
    d.release_markers()
    assert d.meta().state == S.COMPLETE_COMMIT and d.meta().partitions == set()


@pytest.mark.parametrize("setup,commit,error", [
    ("empty", True, E.INVALID_TXN_STATE),
    ("empty", False, E.INVALID_TXN_STATE),
    ("committed", True, E.NONE),               # a retry of a commit that completed
    ("committed", False, E.INVALID_TXN_STATE),
    ("aborted", False, E.NONE),
    ("aborted", True, E.INVALID_TXN_STATE),
])
def test_end_transaction_by_state(setup, commit, error):
    d = Driver()
    d.init()
    if setup != "empty":
        d.add([("t", 0)])
        d.end(commit=setup == "committed")
    assert d.end(commit=commit)[0] == error


def test_end_transaction_in_prepare_the_other_way_is_invalid_txn_state():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    d.end(commit=True, hold_markers=True)
    d.c.txns[TID].pending = None            # as after the completion write failed
    assert d.end(commit=False)[0] == E.INVALID_TXN_STATE
    assert d.end(commit=True)[0] == E.CONCURRENT_TRANSACTIONS


@pytest.mark.parametrize("pid,epoch,error", [
    (999, 0, E.INVALID_PRODUCER_ID_MAPPING),
    (1000, 1, E.PRODUCER_FENCED),
    (1000, -1, E.PRODUCER_FENCED),
])
def test_add_partitions_owner_checks(pid, epoch, error):
    d = Driver()
    d.init()
    assert d.add([("t", 0)], pid=pid, epoch=epoch) == error


def test_add_partitions_unknown_id_and_empty_id():
    d = Driver()
    assert d.c.add_partitions(T0, "nobody", 1, 0, [("t", 0)]).error == E.INVALID_PRODUCER_ID_MAPPING
    assert d.c.add_partitions(T0, "", 1, 0, [("t", 0)]).error == E.INVALID_REQUEST


def test_add_partitions_already_added_writes_nothing():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    decision = d.c.add_partitions(T0, TID, 1000, 0, [("t", 0)])
    assert decision.error == E.NONE and decision.transit is None


def test_transaction_start_time_is_the_first_add():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    d.now += 5000
    d.add([("t", 1)])
    assert d.meta().start_ms == T0 and d.meta().partitions == {("t", 0), ("t", 1)}


def test_end_transaction_owner_checks_in_order():
    d = Driver()
    assert d.end(pid=1, epoch=0)[0] == E.INVALID_PRODUCER_ID_MAPPING       # unknown id
    d.init()
    d.add([("t", 0)])
    assert d.end(pid=7, epoch=9)[0] == E.INVALID_PRODUCER_ID_MAPPING       # id before epoch
    assert d.end(epoch=5)[0] == E.PRODUCER_FENCED
    assert d.end(tid="")[0] == E.INVALID_REQUEST


def test_verify_partitions():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    assert d.c.verify_partitions(TID, 1000, 0, [("t", 0), ("t", 1)]) == {
        ("t", 0): E.NONE, ("t", 1): E.TRANSACTION_ABORTABLE}
    assert d.c.verify_partitions(TID, 1000, 3, [("t", 0)]) == {("t", 0): E.PRODUCER_FENCED}
    assert d.c.verify_partitions("other", 1000, 0, [("t", 0)]) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}


def test_kip360_expected_producer_id_and_epoch():
    d = Driver()
    d.init()
    assert d.init(expected=(1000, 0)) == (E.NONE, 1000, 1)
    assert d.init(expected=(1000, 0))[0] == E.NONE          # a retry of that bump: previous epoch
    assert d.init(expected=(1000, 7))[0] == E.PRODUCER_FENCED
    assert d.init(expected=(5555, 1))[0] == E.PRODUCER_FENCED


def test_exhausted_epoch_rotates_the_producer_id():
    d = Driver()
    d.init()
    d.meta().producer_epoch = 32766
    assert d.init() == (E.NONE, 1001, 0)
    assert d.meta().previous_producer_id == 1000


def test_timed_out_transaction_is_aborted_and_its_producer_fenced():
    d = Driver()
    d.init(timeout=10_000)
    d.add([("t", 0)])
    d.now += 10_000
    assert d.c.timed_out(d.now) == []                       # not past its timeout yet
    d.now += 1
    [(tid, pid, epoch)] = d.c.timed_out(d.now)
    assert (tid, pid, epoch) == (TID, 1000, 1)
    assert d.end(tid, pid, epoch, False, from_client=False)[0] == E.NONE
    assert d.meta().state == S.COMPLETE_ABORT
    assert d.end(epoch=0, commit=True)[0] == E.PRODUCER_FENCED
    assert d.add([("t", 0)], epoch=0) == E.PRODUCER_FENCED


def test_failed_fence_write_keeps_the_bumped_epoch():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    [(tid, pid, epoch)] = d.c.timed_out(d.now + 10**9)
    decision = d.c.end_transaction(d.now, tid, pid, epoch, False, from_client=False)
    d.c.failed(tid, decision.transit)
    assert d.meta().state == S.ONGOING and d.meta().producer_epoch == 1
    [(_, _, again)] = d.c.timed_out(d.now + 10**9)
    assert again == 1                                       # not bumped twice


def test_failed_write_changes_nothing():
    d = Driver()
    d.init()
    assert d.init(fail_write=True)[0] == E.NOT_COORDINATOR
    assert d.meta().producer_epoch == 0 and not d.meta().has_pending


def test_expiry_of_idle_transactional_ids():
    d = Driver(transactional_id_expiration_ms=1000)
    d.init()
    d.init("busy")
    d.add([("t", 0)], tid="busy")
    d.now += 1000
    expired = d.c.expired(d.now)
    assert [tid for tid, _ in expired] == [TID]             # an open transaction never expires
    d.c.written(TID, expired[0][1])
    assert TID not in d.c.txns
    assert d.init() == (E.NONE, 1002, 0)                    # a new life: a new producer id


def test_replay_rebuilds_the_state():
    d = Driver()
    d.init()
    d.add([("t", 0), ("u", 3)])
    written = d.meta().as_transit()
    fresh = Driver()
    fresh.c.replay(TID, written)
    meta = fresh.meta()
    assert (meta.state, meta.producer_id, meta.producer_epoch, meta.partitions) == \
        (S.ONGOING, 1000, 0, {("t", 0), ("u", 3)})
    fresh.c.replay(TID, None)
    assert TID not in fresh.c.txns


def test_unfinished_transactions_after_a_reload():
    d = Driver()
    d.init()
    d.add([("t", 0)])
    d.end(commit=True, hold_markers=True)
    prepared = d.meta().as_transit()
    assert prepared.state == S.PREPARE_ABORT or prepared.state == S.PREPARE_COMMIT
    fresh = Driver()
    fresh.c.replay(TID, prepared)
    [meta] = fresh.c.unfinished()
    complete = fresh.c.markers_begin(T0, TID)
    assert complete.state == S.COMPLETE_COMMIT
    fresh.c.written(TID, complete)
    assert fresh.meta().state == S.COMPLETE_COMMIT


def test_list_and_describe():
    d = Driver()
    d.init("a")
    d.init("b")
    d.add([("t", 0)], tid="b")
    rows, unknown = d.c.list(d.now, set(), {"Ongoing", "Bogus"})
    assert [r.transactional_id for r in rows] == ["b"] and unknown == ["Bogus"]
    rows, _ = d.c.list(d.now, {1000}, set())
    assert [r.transactional_id for r in rows] == ["a"]
    d.now += 100
    assert [r.transactional_id for r in d.c.list(d.now, set(), set(), 50)[0]] == ["a", "b"]
    assert [r.transactional_id for r in d.c.list(d.now, set(), set(), 100)[0]] == ["a"]
    # KIP-1152: an RE2/J pattern the whole id matches; one RE2/J refuses fails the list
    assert [r.transactional_id for r in d.c.list(d.now, set(), set(), id_pattern="[ab]")[0]] == ["a", "b"]
    assert [r.transactional_id for r in d.c.list(d.now, set(), set(), id_pattern="b|c")[0]] == ["b"]
    assert d.c.list(d.now, set(), set(), id_pattern="")[0] == d.c.list(d.now, set(), set())[0]
    assert d.c.list(d.now, set(), {"Bogus"}, id_pattern="(a)\\1") == E.INVALID_REGULAR_EXPRESSION
    assert d.c.describe("nope") == E.TRANSACTIONAL_ID_NOT_FOUND
    assert d.c.describe("") == E.INVALID_REQUEST
    assert d.c.describe("b").partitions == {("t", 0)}


def test_illegal_transition_is_refused():
    d = Driver()
    d.init()
    with pytest.raises(IllegalTransition):
        d.meta().prepare_complete(T0)       # Empty cannot complete a commit
