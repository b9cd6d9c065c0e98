"""The shard's keyed timers: re-arming keeps the heap small, and firing order is Kafka's."""

from coordinator.timers import Timers
from protocol.errors import ErrorCode as E

from tests.support.coordinator_harness import Harness


def test_a_member_heartbeating_a_thousand_times_leaves_a_constant_heap():
    """Every Heartbeat and OffsetCommit re-arms the session: it must move the timer, not push."""
    h = Harness()
    (member,), generation = h.stable_group(1)
    before = h.shard.timers.heap_size
    for _ in range(1_000):
        h.advance(100)
        assert h.replies[h.heartbeat(member, generation)].error_code == E.NONE
        h.commit(member, generation)
    assert h.shard.timers.heap_size <= before + 2
    assert h.group_state().state.value == "Stable"


def test_session_still_expires_at_the_last_rearmed_deadline():
    h = Harness()
    (member,), generation = h.stable_group(1, session=10_000)
    for _ in range(5):
        h.advance(9_000)
        h.heartbeat(member, generation)
    h.advance(9_999)
    assert member in h.group_state().members
    h.advance(1)
    assert member not in h.group_state().members


def fired(timers: Timers, now: int) -> list:
    names = []
    for fire in timers.due(now):
        fire(names, now)
    return names


def timer(name):
    return lambda out, now: out.append(name)


def test_same_deadline_fires_in_the_order_last_scheduled():
    timers = Timers()
    timers.schedule("a", 100, timer("a"))
    timers.schedule("b", 200, timer("b"))
    timers.schedule("a", 200, timer("a"))      # re-armed later: now after b
    timers.schedule("c", 200, timer("c"))
    assert fired(timers, 150) == []
    assert timers.next_deadline() == 200
    assert fired(timers, 200) == ["b", "a", "c"]
    assert len(timers) == 0 and timers.heap_size == 0


def test_cancel_and_earlier_rearm():
    timers = Timers()
    timers.schedule("a", 100, timer("a"))
    timers.schedule("b", 300, timer("b"))
    timers.schedule("b", 50, timer("b"))       # earlier: a new heap entry, the old one stale
    timers.cancel("a")
    assert "a" not in timers and "b" in timers
    assert timers.next_deadline() == 50
    assert fired(timers, 1_000) == ["b"]
    assert timers.next_deadline() is None and timers.heap_size == 0


def test_a_callback_may_schedule_a_timer_already_due():
    timers = Timers()

    def chain(out, now):
        out.append("first")
        timers.schedule("second", now, timer("second"))

    timers.schedule("first", 10, chain)
    assert fired(timers, 10) == ["first", "second"]
