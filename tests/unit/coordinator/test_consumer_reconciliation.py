"""Reconciliation (coordinator/consumer/reconciliation.py) against Kafka's CurrentAssignmentBuilder.

The table reproduces every case of Kafka's CurrentAssignmentBuilderTest (modern/consumer), with
its input member, target, partition-epoch function and owned partitions, and its expected
member; then scenarios through the Harness check the promise the state machine exists for: a
partition goes to its new owner only after the old owner's heartbeat said it had revoked it.
"""

from __future__ import annotations

import random
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.consumer.member import ConsumerGroupMember, MemberState
from coordinator.consumer.reconciliation import reconcile
from coordinator.errors import GroupError
from protocol.errors import ErrorCode as E

from tests.support.consumer_harness import (ConsumerHarness, TopicPartitions, owned,
                                            response_assignment, topic_id)

T1, T2 = topic_id("t1"), topic_id("t2")
S = MemberState


def mk(**by_topic) -> dict:
    """Kafka's mkAssignment(mkTopicAssignment(topicId1, ...), ...): ``mk(t1=[1, 2], t2=[4])``."""
    ids = {"t1": T1, "t2": T2}
    return {ids[t]: frozenset(ps) for t, ps in by_topic.items()}


def reported(**by_topic) -> list:
    """The member's owned partitions as a heartbeat carries them."""
    ids = {"t1": T1, "t2": T2}
    return [TopicPartitions(topic_id=ids[t], partitions=list(ps)) for t, ps in by_topic.items()]


def at(epoch: int, *assignments: dict) -> dict:
    """Kafka's toAssignmentWithEpochs: every partition of ``assignments`` assigned at ``epoch``."""
    return {(t, p): epoch for a in assignments for t, ps in a.items() for p in ps}


def member(state: S, epoch: int, previous: int, assigned: dict, pending: dict | None = None,
           epochs: dict | None = None):
    """A member whose partitions were all assigned at its epoch, unless ``epochs`` says."""
    pending = pending or {}
    return ConsumerGroupMember("member", state=state, member_epoch=epoch,
                               previous_member_epoch=previous, assigned=assigned,
                               pending_revocation=pending,
                               assigned_at=at(epoch, assigned, pending) if epochs is None else epochs)


def every(epoch: int) -> Callable:
    return lambda topic, partition: epoch


def view(m: ConsumerGroupMember) -> tuple:
    return (m.state, m.member_epoch, m.previous_member_epoch, dict(m.assigned),
            dict(m.pending_revocation), dict(m.assigned_at))


def expect(state: S, epoch: int, previous: int, assigned: dict, pending: dict, epochs: dict) -> tuple:
    return state, epoch, previous, assigned, pending, epochs


UNREVOKED_10 = member(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[2, 3], t2=[5, 6]), mk(t1=[1], t2=[4]))
UNRELEASED_11 = member(S.UNRELEASED_PARTITIONS, 11, 11, mk(t1=[2, 3], t2=[5, 6]))
STABLE_10 = member(S.STABLE, 10, 10, mk(t1=[1, 2, 3], t2=[4, 5, 6]))
UNKNOWN_11 = member(S.UNKNOWN, 11, 11, mk(t1=[3], t2=[6]), mk(t1=[2], t2=[5]))
BOTH = frozenset({T1, T2})

# (id, member, target epoch, target, partition epoch, owned, expected member view), as Kafka
# 4.3's CurrentAssignmentBuilderTest (the member subscribes to both topics)
CASES = [
    ("testStableToStable", member(S.STABLE, 10, 10, mk(t1=[1, 2, 3], t2=[4, 5, 6]),
                                  epochs=at(5, mk(t1=[1, 2, 3], t2=[4, 5, 6]))),
     11, mk(t1=[1, 2, 3], t2=[4, 5, 6]), every(10), None,
     expect(S.STABLE, 11, 10, mk(t1=[1, 2, 3], t2=[4, 5, 6]), {}, at(5, mk(t1=[1, 2, 3], t2=[4, 5, 6])))),
    ("testStableToStableWithNewPartitions", STABLE_10, 11, mk(t1=[1, 2, 3, 4], t2=[4, 5, 6, 7]),
     every(-1), None,
     expect(S.STABLE, 11, 10, mk(t1=[1, 2, 3, 4], t2=[4, 5, 6, 7]), {},
            at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6])) | at(11, mk(t1=[4], t2=[7])))),
    ("testStableToUnrevokedPartitions", STABLE_10, 11, mk(t1=[2, 3, 4], t2=[5, 6, 7]), every(-1),
     None,
     expect(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[2, 3], t2=[5, 6]), mk(t1=[1], t2=[4]),
            at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6])))),
    ("testStableToUnreleasedPartitions", STABLE_10, 11, mk(t1=[1, 2, 3, 4], t2=[4, 5, 6, 7]),
     every(10), None,
     expect(S.UNRELEASED_PARTITIONS, 11, 10, mk(t1=[1, 2, 3], t2=[4, 5, 6]), {},
            at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6])))),
    ("testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions", STABLE_10, 11,
     mk(t1=[1, 2, 3], t2=[4, 5, 7]), lambda t, p: 10 if t == T2 else -1, [],
     expect(S.UNRELEASED_PARTITIONS, 11, 10, mk(t1=[1, 2, 3], t2=[4, 5]), {},
            at(10, mk(t1=[1, 2, 3], t2=[4, 5])))),
    ("testUnrevokedPartitionsToStable", UNREVOKED_10, 11, mk(t1=[2, 3], t2=[5, 6]), every(-1),
     reported(t1=[2, 3], t2=[5, 6]),
     expect(S.STABLE, 11, 10, mk(t1=[2, 3], t2=[5, 6]), {}, at(10, mk(t1=[2, 3], t2=[5, 6])))),
    ("testRemainsInUnrevokedPartitions (owned not sent)", UNREVOKED_10, 12, mk(t1=[3], t2=[6]),
     every(-1), None, view(UNREVOKED_10)),
    ("testRemainsInUnrevokedPartitions (still owns t1-1)", UNREVOKED_10, 12, mk(t1=[3], t2=[6]),
     every(-1), reported(t1=[1, 2, 3], t2=[5, 6]), view(UNREVOKED_10)),
    ("testRemainsInUnrevokedPartitions (still owns t2-4)", UNREVOKED_10, 12, mk(t1=[3], t2=[6]),
     every(-1), reported(t1=[2, 3], t2=[4, 5, 6]), view(UNREVOKED_10)),
    # Kafka 4.2 (KAFKA-19974): no epoch bump when leaving UNREVOKED_PARTITIONS for more revoking
    ("testUnrevokedPartitionsToUnrevokedPartitions", UNREVOKED_10, 12, mk(t1=[3], t2=[6]),
     every(-1), reported(t1=[2, 3], t2=[5, 6]),
     expect(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[3], t2=[6]), mk(t1=[2], t2=[5]),
            at(10, mk(t1=[2, 3], t2=[5, 6])))),
    ("testUnrevokedPartitionsToUnreleasedPartitions",
     member(S.UNREVOKED_PARTITIONS, 11, 10, mk(t1=[2, 3], t2=[5, 6])), 11,
     mk(t1=[2, 3, 4], t2=[5, 6, 7]), every(10), reported(t1=[2, 3], t2=[5, 6]),
     expect(S.UNRELEASED_PARTITIONS, 11, 11, mk(t1=[2, 3], t2=[5, 6]), {}, at(11, mk(t1=[2, 3], t2=[5, 6])))),
    ("testUnrevokedPartitionsToStableWithReturnedPartitionsPendingRevocation",
     member(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[2, 3], t2=[5, 6]), mk(t1=[4])), 12,
     mk(t1=[2, 3, 4], t2=[5, 6, 7]), lambda t, p: 10 if (t, p) in at(0, mk(t1=[2, 3, 4], t2=[5, 6])) else -1,
     reported(t1=[2, 3], t2=[5, 6]),
     expect(S.STABLE, 12, 10, mk(t1=[2, 3, 4], t2=[5, 6, 7]), {},
            at(10, mk(t1=[2, 3], t2=[5, 6])) | at(12, mk(t1=[4], t2=[7])))),
    ("testUnreleasedPartitionsToStable", UNRELEASED_11, 12, mk(t1=[2, 3], t2=[5, 6]), every(10),
     None,
     expect(S.STABLE, 12, 11, mk(t1=[2, 3], t2=[5, 6]), {}, at(11, mk(t1=[2, 3], t2=[5, 6])))),
    ("testUnreleasedPartitionsToStableWithNewPartitions", UNRELEASED_11, 11,
     mk(t1=[2, 3, 4], t2=[5, 6, 7]), every(-1), None,
     expect(S.STABLE, 11, 11, mk(t1=[2, 3, 4], t2=[5, 6, 7]), {}, at(11, mk(t1=[2, 3, 4], t2=[5, 6, 7])))),
    ("testUnreleasedPartitionsToUnreleasedPartitions", UNRELEASED_11, 11,
     mk(t1=[2, 3, 4], t2=[5, 6, 7]), every(10), None, view(UNRELEASED_11)),
    ("testUnreleasedPartitionsToUnrevokedPartitions", UNRELEASED_11, 12, mk(t1=[3], t2=[6]),
     every(10), None,
     expect(S.UNREVOKED_PARTITIONS, 11, 11, mk(t1=[3], t2=[6]), mk(t1=[2], t2=[5]),
            at(11, mk(t1=[2, 3], t2=[5, 6])))),
    ("testUnknownState (rejoins owning nothing)", UNKNOWN_11, 12, mk(t1=[3], t2=[6]), every(11), [],
     expect(S.STABLE, 12, 11, mk(t1=[3], t2=[6]), {}, at(11, mk(t1=[3], t2=[6])))),
    # not in Kafka's test, decided by the same lines of CurrentAssignmentBuilder.build
    ("stable at the target epoch stays as it is", STABLE_10, 10, mk(t1=[1]), every(-1), [],
     view(STABLE_10)),
    ("stable, revoking partitions the member no longer reports", STABLE_10, 11,
     mk(t1=[1, 2, 3], t2=[4, 5]), every(-1), reported(t1=[1, 2, 3], t2=[4, 5]),
     expect(S.STABLE, 11, 10, mk(t1=[1, 2, 3], t2=[4, 5]), {}, at(10, mk(t1=[1, 2, 3], t2=[4, 5])))),
    ("stable, losing a whole topic", STABLE_10, 11, mk(t1=[1, 2, 3]), every(-1), None,
     expect(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[1, 2, 3]), mk(t2=[4, 5, 6]),
            at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6])))),
    ("stable, revoking and gaining at once: revoke first", STABLE_10, 11,
     mk(t1=[1, 2, 3, 9], t2=[4, 5]), every(-1), None,
     expect(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[1, 2, 3], t2=[4, 5]), mk(t2=[6]),
            at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6])))),
    ("unrevoked, after revoking: new partitions come with the target epoch", UNREVOKED_10, 11,
     mk(t1=[2, 3, 7], t2=[5, 6]), every(-1), reported(t1=[2, 3], t2=[5, 6]),
     expect(S.STABLE, 11, 10, mk(t1=[2, 3, 7], t2=[5, 6]), {},
            at(10, mk(t1=[2, 3], t2=[5, 6])) | at(11, mk(t1=[7])))),
    ("unreleased, partly released", UNRELEASED_11, 11, mk(t1=[2, 3, 4], t2=[5, 6, 7]),
     lambda t, p: 10 if (t, p) == (T2, 7) else -1, None,
     expect(S.UNRELEASED_PARTITIONS, 11, 11, mk(t1=[2, 3, 4], t2=[5, 6]), {},
            at(11, mk(t1=[2, 3, 4], t2=[5, 6])))),
]


@pytest.mark.parametrize("start,target_epoch,target,partition_epoch,owned_now,expected",
                         [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_current_assignment_builder(start, target_epoch, target, partition_epoch, owned_now, expected):
    result = reconcile(start, target_epoch, target, partition_epoch, owned_now, subscribed=BOTH)
    assert view(result) == expected
    assert result.member_id == start.member_id
    if expected == view(start):
        assert result == start                   # "returns the member": no record is written


ONLY_T2 = frozenset({T2})


@pytest.mark.parametrize("epoch,target_epoch,expected_epoch,changed", [
    (10, 11, 11, False), (10, 11, 11, True), (10, 10, 10, True)])
def test_stable_drops_topics_left_from_its_subscription(epoch, target_epoch, expected_epoch, changed):
    """testStableToStableWithAssignmentTopicsNoLongerInSubscription: a new target, or a changed
    subscription, drops the topic the member left; it holds none of it any more."""
    start = member(S.STABLE, epoch, epoch - 1, mk(t1=[1, 2, 3], t2=[4, 5, 6]))
    result = reconcile(start, target_epoch, mk(t1=[1, 2, 3], t2=[4, 5, 6]), every(-1),
                       reported(t2=[4, 5, 6]), subscribed=ONLY_T2, subscription_changed=changed)
    assert view(result) == expect(S.STABLE, expected_epoch, epoch, mk(t2=[4, 5, 6]), {},
                                  at(epoch, mk(t2=[4, 5, 6])))


@pytest.mark.parametrize("epoch,target_epoch,changed", [(10, 11, False), (10, 11, True), (10, 10, True)])
def test_stable_revokes_topics_left_from_its_subscription(epoch, target_epoch, changed):
    """testStableToUnrevokedPartitionsWithAssignmentTopicsNoLongerInSubscription: it still
    holds the topic it left, so it revokes it, keeping its epoch (its previous one too)."""
    start = member(S.STABLE, epoch, epoch - 1, mk(t1=[1, 2, 3], t2=[4, 5, 6]))
    result = reconcile(start, target_epoch, mk(t1=[1, 2, 3], t2=[4, 5, 6]), every(-1),
                       reported(t1=[1, 2, 3], t2=[4, 5, 6]), subscribed=ONLY_T2,
                       subscription_changed=changed)
    assert view(result) == expect(S.UNREVOKED_PARTITIONS, epoch, epoch, mk(t2=[4, 5, 6]),
                                  mk(t1=[1, 2, 3]), at(epoch, mk(t1=[1, 2, 3], t2=[4, 5, 6])))


def test_revoking_member_revokes_a_topic_it_left_too():
    """testRemainsInUnrevokedPartitionsWithAssignmentTopicsNoLongerInSubscription."""
    result = reconcile(UNREVOKED_10, 12, mk(t1=[1, 3, 4], t2=[6, 7]), every(-1),
                       reported(t1=[1, 2, 3], t2=[4, 5, 6]), subscribed=ONLY_T2,
                       subscription_changed=True)
    assert view(result) == expect(S.UNREVOKED_PARTITIONS, 10, 10, mk(t2=[5, 6]),
                                  mk(t1=[1, 2, 3], t2=[4]), at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6])))


@pytest.mark.parametrize("subscribed,expected", [
    pytest.param(frozenset({T1}), expect(S.UNREVOKED_PARTITIONS, 10, 10, mk(t1=[1, 2, 3]), mk(t2=[4, 5, 6]),
                                         at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6]))),
                 id="testSubscribedTopicNameAndUnresolvedRegularExpression"),
    pytest.param(frozenset(), expect(S.UNREVOKED_PARTITIONS, 10, 10, {}, mk(t1=[1, 2, 3], t2=[4, 5, 6]),
                                     at(10, mk(t1=[1, 2, 3], t2=[4, 5, 6]))),
                 id="testUnresolvedRegularExpression"),
    pytest.param(BOTH, view(STABLE_10), id="testSubscribedTopicNameAndResolvedRegularExpression"),
])
def test_an_unresolved_regex_subscribes_to_nothing(subscribed, expected):
    """The regex cases: the manager gives a regex's resolved topics, none while unresolved."""
    result = reconcile(STABLE_10, 10, mk(t1=[1, 2, 3], t2=[4, 5, 6]), every(-1),
                       reported(t1=[1, 2, 3], t2=[4, 5, 6]), subscribed=subscribed,
                       subscription_changed=True)
    assert view(result) == expected


UNKNOWN_STATE = ("The consumer group member is in a unknown state. The member must abandon all its "
                 "partitions and rejoin.")


@pytest.mark.parametrize("owned_now", [
    pytest.param(None, id="owned not sent"),
    pytest.param(reported(t1=[3]), id="owning partitions"),
    pytest.param(reported(t1=[]), id="owning an empty list of a topic"),
])
def test_unknown_state_fences_unless_the_member_owns_nothing(owned_now):
    """testUnknownState: FencedMemberEpochException unless ownedTopicPartitions is an empty list."""
    with pytest.raises(GroupError) as e:
        reconcile(UNKNOWN_11, 12, mk(t1=[3], t2=[6]), every(10), owned_now, subscribed=BOTH)
    assert (e.value.code, e.value.message) == (E.FENCED_MEMBER_EPOCH, UNKNOWN_STATE)


# --- through the shard: no partition ever has two owners -------------------------------------

class Client:
    """A consumer as KIP-848 describes it: it holds what the last answer assigned it, revokes at
    once (reporting what it holds in every heartbeat), unless told to be slow."""

    def __init__(self, h: ConsumerHarness, member_id: str, topics: list[str]):
        self.h, self.member_id, self.topics = h, member_id, topics
        self.epoch = 0
        self.held: dict = {}
        self.slow = False            # keeps reporting (and holding) what it must give up

    def heartbeat(self):
        h = self.h
        if self.epoch == 0:
            response = h.hb(self.member_id, 0, topics=self.topics)
        else:
            response = h.hb(self.member_id, self.epoch, owned=owned(self.held))
        assert response.error_code == E.NONE, response
        self.epoch = response.member_epoch
        new = response_assignment(response)
        if new is not None:
            if self.slow:            # takes the new partitions, keeps the revoked ones for now
                merged = {t: frozenset(self.held.get(t, frozenset()) | new.get(t, frozenset()))
                          for t in set(self.held) | set(new)}
                self.held = merged
            else:
                self.held = new
        return response

    def catch_up(self):
        """Drop what the coordinator no longer assigns (the slow client finally revokes)."""
        assigned = self.h.member(self.member_id).assigned
        self.held = {t: ps & assigned.get(t, frozenset()) for t, ps in self.held.items()
                     if ps & assigned.get(t, frozenset())}


def assert_single_owners(clients) -> None:
    """No partition held by two clients, nor assigned (or being revoked) by two members."""
    seen: dict = {}
    for c in clients:
        for t, ps in c.held.items():
            for p in ps:
                assert (t, p) not in seen, f"{t}-{p} held by {seen[(t, p)]} and {c.member_id}"
                seen[(t, p)] = c.member_id
    if not clients:
        return
    group = clients[0].h.cgroup()
    owners: dict = {}
    for m in group.members.values():
        for t, p in m.owned_partitions():
            assert (t, p) not in owners, f"{t}-{p} owned by {owners[(t, p)]} and {m.member_id}"
            owners[(t, p)] = m.member_id
    # the coordinator never thinks a partition free while a client still holds it
    for (t, p), holder in seen.items():
        assert owners.get((t, p)) == holder, f"{t}-{p} held by {holder}, owned by {owners.get((t, p))}"


def test_a_partition_moves_only_after_its_owner_revoked_it():
    """Step by step: m2 joins and must get half of m1's partitions; m1 is slow to revoke."""
    h = ConsumerHarness(topics={"foo": 4})
    m1, m2 = Client(h, "m1", ["foo"]), Client(h, "m2", ["foo"])
    m1.heartbeat()
    assert m1.held == {topic_id("foo"): frozenset(range(4))}
    m1.slow = True
    m2.heartbeat()                                    # joins: its target is taken by m1
    assert (m2.epoch, m2.held) == (3, {})
    assert h.member("m2").state == MemberState.UNRELEASED_PARTITIONS
    m1.heartbeat()                                    # told to revoke; still holds them
    revoking = h.member("m1").pending_revocation
    assert revoking and h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    for _ in range(3):                                # m2 waits as long as m1 reports them
        m2.heartbeat()
        m1.heartbeat()
        assert m2.held == {} and h.member("m1").pending_revocation == revoking
        assert_single_owners([m1, m2])
    m1.catch_up()                                     # revoked on the client...
    assert_single_owners([m1, m2])
    m2.heartbeat()                                    # ...but not yet said: m2 still waits
    assert m2.held == {}
    m1.heartbeat()                                    # said: m1 moves to epoch 3
    assert (m1.epoch, h.member("m1").pending_revocation) == (3, {})
    m2.heartbeat()                                    # now m2 gets them
    assert m2.held == dict(revoking)
    assert h.member("m2").state == MemberState.STABLE
    assert_single_owners([m1, m2])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(20, 60))
def test_random_heartbeat_orders_never_give_a_partition_two_owners(seed, steps):
    rnd = random.Random(seed)
    h = ConsumerHarness(topics={"foo": 5, "bar": 3})
    names = ["m1", "m2", "m3", "m4"]
    subscriptions = {"m1": ["foo"], "m2": ["foo", "bar"], "m3": ["bar"], "m4": ["foo", "bar"]}
    clients: dict[str, Client] = {}
    sizes = {"foo": 5, "bar": 3}
    for _ in range(steps):
        action = rnd.random()
        name = rnd.choice(names)
        if action > 0.97:                             # a topic grows
            topic = rnd.choice(sorted(sizes))
            sizes[topic] += 1
            h.set_topics(**sizes)
        elif name not in clients:
            if action < 0.5:
                clients[name] = Client(h, name, subscriptions[name])
                clients[name].slow = rnd.random() < 0.3
                clients[name].heartbeat()
        elif action < 0.75:
            clients[name].heartbeat()
        elif action < 0.85:
            clients[name].catch_up()
        elif action < 0.92:
            clients[name].slow = not clients[name].slow
        else:                                         # leaves, giving up what it holds
            assert h.hb(name, -1).error_code == E.NONE
            del clients[name]
        assert_single_owners(list(clients.values()))
    for _ in range(10):                               # everyone settles
        for c in clients.values():
            c.slow = False
            c.catch_up()
            c.heartbeat()
            assert_single_owners(list(clients.values()))
    group = h.cgroup() if clients else None
    if group is not None:
        assert all(m.state == MemberState.STABLE and m.member_epoch == group.group_epoch
                   for m in group.members.values())
        assert {n: c.held for n, c in clients.items()} == \
            {n: dict(group.target.get(n, {})) for n in clients}
