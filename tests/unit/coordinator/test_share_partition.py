"""A share-partition's delivery state (coordinator/share/partition.py), its share sessions
(sessions.py) and its durable state (state.py), as Kafka's SharePartition, ShareSessionCache and
share coordinator keep them; time is passed in."""

import uuid

import pytest

from coordinator.share.partition import (ACCEPT, ARCHIVED, AVAILABLE, GAP, REJECT, RELEASE, RENEW, Acquired,
                                         Limits, LogBatch, SharePartition, ShareError)
from coordinator.share.sessions import SessionError, ShareSessions, next_epoch
from coordinator.share.state import ShareStates, combine, decode
from protocol.errors import ErrorCode

LIMITS = Limits(delivery_count_limit=3, max_record_locks=100, lock_duration_ms=1000)
LOG = [LogBatch(0, 4), LogBatch(5, 9)]


def acquired(sp, member="a", now=0, max_records=500, batch_size=500, log=LOG):
    return sp.acquire(member, log, sp.next_fetch_offset(), max_records, batch_size, LIMITS, now)


def test_new_records_are_acquired_whole_batches_at_a_time():
    sp = SharePartition(0)
    assert acquired(sp, max_records=3) == [Acquired(0, 4, 1)]           # the whole first log batch
    assert acquired(sp) == [Acquired(5, 9, 1)]
    assert acquired(sp) == []                                            # nothing left
    assert acquired(SharePartition(0), batch_size=5) == [Acquired(0, 4, 1), Acquired(5, 9, 1)]


def test_record_limit_acquires_at_most_max_records():
    sp = SharePartition(0)
    got = sp.acquire("a", LOG, 0, 3, 500, LIMITS, 0, record_limit=True)
    assert got == [Acquired(0, 2, 1)]
    assert sp.acquire("b", LOG, sp.next_fetch_offset(), 4, 500, LIMITS, 0, record_limit=True) == [
        Acquired(3, 4, 1), Acquired(5, 6, 1)]                           # the rest of a batch, then new ones
    assert sp.acquire("c", LOG, sp.next_fetch_offset(), 500, 500, LIMITS, 0, record_limit=True) == [Acquired(7, 9, 1)]


def test_acknowledgements_move_the_start_offset():
    sp = SharePartition(0)
    acquired(sp)
    sp.acknowledge("a", [(0, 2, [ACCEPT]), (3, 3, [REJECT])], LIMITS, 1)
    assert sp.start_offset == 4
    sp.acknowledge("a", [(4, 9, [ACCEPT])], LIMITS, 1)
    assert (sp.start_offset, sp.batches()) == (10, [])


def test_a_released_record_comes_back_counted_and_is_archived_at_the_limit():
    sp = SharePartition(0)
    acquired(sp, log=[LogBatch(0, 0)])
    for count in (2, 3):
        sp.acknowledge("a", [(0, 0, [RELEASE])], LIMITS, 1)
        assert acquired(sp, log=[LogBatch(0, 0)]) == [Acquired(0, 0, count)]
    sp.acknowledge("a", [(0, 0, [RELEASE])], LIMITS, 1)                  # the third delivery was the last
    assert sp.start_offset == 1 and acquired(sp, log=[LogBatch(0, 0)]) == []


def test_a_record_released_while_settling_is_found_again_once_settled():
    """A ShareFetch's own release is not taken by its first try, which moves the next fetch
    offset past it; once the release is written the record must be found again (it was left
    behind for good, and a consumer whose releases all came within fetches stalled)."""
    sp = SharePartition(0)
    acquired(sp, log=[LogBatch(0, 2)])
    sp.acknowledge("a", [(0, 0, [ACCEPT]), (1, 1, [RELEASE]), (2, 2, [ACCEPT])], LIMITS, 1, settling=True)
    assert sp.next_fetch_offset() == 3 and acquired(sp, log=[LogBatch(0, 2)]) == []
    sp.settle()
    assert sp.next_fetch_offset() == 1                       # where the broker reads the log from
    assert acquired(sp, log=[LogBatch(0, 2)]) == [Acquired(1, 1, 2)]


def test_locks_expire_back_to_available():
    sp = SharePartition(0)
    acquired(sp, now=0)
    assert sp.next_deadline() == 1000
    assert sp.expire_locks(999, LIMITS) == []
    assert sp.expire_locks(1000, LIMITS) == [(0, 9, AVAILABLE)]
    assert acquired(sp, member="b", now=1000) == [Acquired(0, 9, 2)]


def test_a_renewed_lock_lasts_longer():
    sp = SharePartition(0)
    acquired(sp, now=0)
    sp.acknowledge("a", [(0, 9, [RENEW])], LIMITS, 800)
    assert sp.expire_locks(1000, LIMITS) == [] and sp.next_deadline() == 1800


@pytest.mark.parametrize("batches, code", [
    ([(0, 9, [ACCEPT])], ErrorCode.INVALID_RECORD_STATE),                # another member's records
    ([(20, 21, [ACCEPT])], ErrorCode.INVALID_REQUEST),                   # past what was acquired
    ([(0, 0, [ACCEPT]), (0, 0, [ACCEPT])], ErrorCode.INVALID_RECORD_STATE),
    ([(0, 0, [9])], ErrorCode.INVALID_REQUEST),
])
def test_refused_acknowledgements_change_nothing(batches, code):
    sp = SharePartition(0)
    acquired(sp, member="a")
    member = "b" if code == ErrorCode.INVALID_RECORD_STATE and len(batches) == 1 else "a"
    with pytest.raises(ShareError) as refused:
        sp.acknowledge(member, batches, LIMITS, 1)
    assert refused.value.code == code
    assert sp.durable_state() == (0, [], 0) and sp.next_deadline() == 1000


def test_a_session_releases_what_its_member_holds():
    sp = SharePartition(0)
    acquired(sp, member="a")
    sp.acknowledge("a", [(0, 0, [GAP])], LIMITS, 1)
    assert sp.release_member("a", LIMITS) and acquired(sp, member="b") == [Acquired(1, 9, 2)]


def test_read_committed_skips_aborted_transactions():
    sp = SharePartition(0)
    log = [LogBatch(0, 1, 7, True), LogBatch(2, 2, 7, True, True, True), LogBatch(3, 4)]
    got = sp.acquire("a", log, 0, 500, 500, LIMITS, 0, aborted=[(7, 0)])
    assert got == [Acquired(2, 4, 1)]                                    # the marker stays, for the client


def test_records_gone_from_the_log_leave_the_share_partition():
    sp = SharePartition(0)
    acquired(sp)
    sp.acknowledge("a", [(0, 9, [RELEASE])], LIMITS, 1)
    sp.log_start_moved(6)                                               # retention took 0-5
    assert sp.start_offset == 6 and sp.in_flight() == 4
    assert acquired(sp, member="b", log=[LogBatch(6, 9)]) == [Acquired(6, 9, 2)]
    empty = SharePartition(0)
    empty.log_start_moved(50)
    assert (empty.start_offset, empty.next_fetch_offset()) == (50, 50)


def test_session_epochs():
    sessions = ShareSessions(max_sessions=1)
    key = (uuid.uuid4(), 0)
    with pytest.raises(SessionError) as e:
        sessions.fetch_context(0, "g", "m", 1, [(key, "t")], [], False, "conn")
    assert e.value.code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert sessions.fetch_context(0, "g", "m", 0, [(key, "t")], [], False, "conn").kind == "initial"
    with pytest.raises(SessionError) as e:
        sessions.fetch_context(0, "g", "other", 0, [], [], False, "conn2")
    assert e.value.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    sessions.acknowledge(0, "g", "m", 1)
    with pytest.raises(SessionError) as e:
        sessions.acknowledge(0, "g", "m", 1)
    assert e.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert sessions.fetch_context(0, "g", "m", 2, [], [], True, "conn").kind == "subsequent"
    assert sessions.disconnected("conn") == ("g", "m", [key]) and not sessions.sessions
    assert next_epoch(2**31 - 1) == 1 and next_epoch(-1) == -1


def test_a_member_has_a_session_on_each_node():
    """A member reading partitions led by two nodes keeps a session with each (Kafka's share
    session cache is a broker's): opening one does not end the other."""
    sessions, here, there = ShareSessions(), (uuid.uuid4(), 0), (uuid.uuid4(), 1)
    sessions.fetch_context(0, "g", "m", 0, [(here, "t")], [], False, "conn-0")
    sessions.fetch_context(1, "g", "m", 0, [(there, "t")], [], False, "conn-1")
    assert sessions.fetch_context(0, "g", "m", 1, [], [], False, "conn-0").partitions == [(here, "t")]
    assert sessions.fetch_context(1, "g", "m", 1, [], [], False, "conn-1").partitions == [(there, "t")]
    assert sessions.release(1, "g", "m") == [there]
    assert sessions.fetch_context(0, "g", "m", 2, [], [], False, "conn-0").kind == "subsequent"


def test_durable_state_is_merged_as_kafkas_share_coordinator_merges_it():
    assert combine([(0, 4, AVAILABLE, 1), (3, 6, ARCHIVED, 1), (5, 5, AVAILABLE, 2)], 2) == [
        (2, 2, AVAILABLE, 1), (3, 4, ARCHIVED, 1), (5, 5, AVAILABLE, 2), (6, 6, ARCHIVED, 1)]
    states, key = ShareStates(), ("g", uuid.uuid4(), 3)
    for start, batches in ((0, [(0, 4, AVAILABLE, 1)]), (2, [(2, 3, 2, 1)])):
        states.replay(*decode(states.write(key, start, batches, 0, now=5)))
    assert states.read(key).start_offset == 2 and states.read(key).batches == [(2, 3, 2, 1), (4, 4, AVAILABLE, 1)]
    restored = SharePartition.restored(2, states.read(key).batches)
    assert restored.start_offset == 4 and restored.next_fetch_offset() == 4
