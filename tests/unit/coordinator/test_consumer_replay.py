"""Replay equivalence of KIP-848 consumer groups: a fresh shard that replays every record the
live shard persisted (decoded from their log form) holds the same consumer groups — epochs,
members with their epochs, states and assignments, the target assignment, partition epochs,
subscription metadata, resolved regular expressions — and, once loaded, answers the next
heartbeats as the live shard does (Kafka: GroupMetadataManager.replay then onLoaded).
"""

from __future__ import annotations

import dataclasses
import uuid

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator.config import CoordinatorConfig
from coordinator.consumer.member import MemberState
from protocol.errors import ErrorCode as E

from tests.support.consumer_harness import (ConsumerHarness, consumer_state, delete_groups, owned,
                                            replayed, response_assignment)

#: what a heartbeat of these clients may be answered (anything else is a coordinator failure)
EXPECTED_ERRORS = (E.NONE, E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID,
                   E.UNRELEASED_INSTANCE_ID, E.GROUP_ID_NOT_FOUND)
MEMBER_STATES = (MemberState.STABLE, MemberState.UNREVOKED_PARTITIONS,
                 MemberState.UNRELEASED_PARTITIONS)


def config(**overrides) -> CoordinatorConfig:
    return dataclasses.replace(CoordinatorConfig(), **overrides)


def check_replay(h: ConsumerHarness, *, next_heartbeats: bool = True):
    """The replayed shard equals the live one; then (optionally) both answer one heartbeat of
    every member alike and still agree. Returns the replayed shard."""
    fresh = replayed(h)
    live = h.shard
    assert consumer_state(fresh) == consumer_state(live)
    assert fresh.offsets == live.offsets
    assert set(fresh.groups) == set(live.groups)
    for gid, group in fresh.consumer.groups.items():
        for mid, member in group.members.items():
            assert ("consumer-session", gid, mid) in fresh.timers
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                assert ("consumer-rebalance", gid, mid) in fresh.timers
    if next_heartbeats:
        twin = ConsumerHarness(h.config, group=h.group, now=h.now)
        twin.shard = fresh
        for gid, group in sorted(live.consumer.groups.items()):
            for mid in sorted(group.members):
                member = group.members[mid]
                if member.member_epoch < 0:
                    continue
                held = {}
                for a in (member.assigned, member.pending_revocation):
                    for t, ps in a.items():
                        held[t] = held.get(t, frozenset()) | ps
                answers = [x.hb(mid, member.member_epoch, group=gid, instance=member.instance_id,
                                owned=owned(held)) for x in (h, twin)]
                assert answers[0] == answers[1], (gid, mid)
        assert consumer_state(fresh) == consumer_state(live)
    return fresh


# --- scenarios ---------------------------------------------------------------------------------

def test_members_caught_mid_reconciliation():
    h = ConsumerHarness(topics={"foo": 6, "bar": 2})
    h.hb("m1", 0, topics=["foo", "bar"])
    h.hb("m2", 0, topics=["foo"], rack="r2", assignor="range")
    h.hb("m1", 2)                                        # revoking
    h.hb("m3", 0, topics=["bar"], instance="i3")
    states = {m.state for m in h.cgroup().members.values()}
    assert MemberState.UNREVOKED_PARTITIONS in states and MemberState.UNRELEASED_PARTITIONS in states
    check_replay(h, next_heartbeats=False)
    check_replay(h)


def test_static_leave_rejoin_and_expiry():
    h = ConsumerHarness(topics={"foo": 4})
    h.hb("m1", 0, topics=["foo"], instance="i1")
    h.hb("m2", 0, topics=["foo"], instance="i2")
    h.hb("m1", 2, owned=h.owned_by("m1"))
    h.hb("m1", 2, owned=owned(h.member("m1").assigned))
    h.hb("m2", 3, instance="i2", owned=())
    h.hb("m2", -2, instance="i2")
    check_replay(h)                                      # a member at epoch -2
    h.hb("m2b", 0, topics=["foo"], instance="i2")
    check_replay(h)
    h.advance(46_000)                                    # everyone's session ends
    assert h.cgroup().members == {}
    check_replay(h)


def test_revocation_timeout_fence():
    h = ConsumerHarness(topics={"foo": 3})
    h.hb("m1", 0, rebalance=10_000, topics=["foo"])
    h.hb("m2", 0, rebalance=10_000, topics=["foo"])
    h.hb("m1", 2)
    h.advance(10_000)
    assert "m1" not in h.cgroup().members
    check_replay(h)


def test_regex_subscriptions_and_new_topics():
    h = ConsumerHarness(topics={"foo-1": 2, "bar": 1})
    assert h.hb("m1", 0, regex="foo-.*").error_code == E.NONE
    assert h.hb("m2", 0, topics=["bar"], regex="foo-.*").error_code == E.NONE
    check_replay(h)
    h.set_topics(**{"foo-1": 2, "foo-2": 3, "bar": 1})
    h.advance(1_000)
    h.hb("m1", h.member("m1").member_epoch, owned=h.owned_by("m1"))
    assert h.cgroup().resolved["foo-.*"].topics == {"foo-1", "foo-2"}
    check_replay(h)
    h.hb("m2", h.member("m2").member_epoch, regex="")    # drops its regex
    check_replay(h)


def test_offset_commits_of_members():
    h = ConsumerHarness(topics={"foo": 2})
    epoch = h.hb("m1", 0, topics=["foo"]).member_epoch
    assert h.replies[h.commit("m1", epoch, {("foo", 0): 5, ("foo", 1): 7})].topics[0] \
        .partitions[0].error_code == E.NONE
    h.commit("m1", epoch + 1, {("foo", 0): 9})          # stale epoch: refused, nothing written
    h.commit("", -1, {("foo", 1): 11}, group="simple")   # a simple group beside it
    check_replay(h)


def test_deleted_and_expired_groups():
    cfg = config(offsets_retention_minutes=1, offsets_retention_check_interval_ms=10_000)
    h = ConsumerHarness(cfg, topics={"foo": 2})
    h._collect(h.shard.loaded(0))
    epoch = h.hb("m1", 0, topics=["foo"]).member_epoch
    h.commit("m1", epoch, {("foo", 0): 1})
    h.hb("m1", -1)
    check_replay(h)                                      # an empty group with offsets
    h.advance(70_000)                                    # its offsets expire: the group goes
    assert "g" not in h.shard.consumer.groups
    check_replay(h)
    h.hb("m1", 0, topics=["foo"])
    h.hb("m1", -1)
    assert delete_groups(h, "g") == {"g": E.NONE}
    check_replay(h)


def test_replaying_a_replayed_shard():
    h = ConsumerHarness(topics={"foo": 4, "bar": 2})
    h.hb("m1", 0, topics=["foo", "bar"])
    h.hb("m2", 0, topics=["foo"])
    h.shard = check_replay(h, next_heartbeats=False)     # the node restarts
    h.hb("m1", 2, owned=h.owned_by("m1"))
    h.hb("m3", 0, topics=["bar"], instance="i3")
    check_replay(h)


# --- random traffic ----------------------------------------------------------------------------

NAMES = ("m1", "m2", "m3", "m4")
SUBSCRIPTIONS = st.sampled_from([(("foo",), None), (("foo", "bar"), None), (("bar",), None),
                                 ((), "ba.*"), (("foo",), "ba.*")])


class ConsumerReplayEquivalence(RuleBasedStateMachine):
    """Consumers join, heartbeat (reporting what they hold, or nothing, or stale epochs), leave,
    commit, go silent; topics appear and grow. The log must rebuild the same groups."""

    def __init__(self):
        super().__init__()
        self.h = ConsumerHarness(config(offsets_retention_minutes=2,
                                        offsets_retention_check_interval_ms=30_000),
                                 topics={"foo": 4, "bar": 2})
        self.h._collect(self.h.shard.loaded(0))
        self.ids: dict[str, str] = {}               # name -> current member id
        self.epoch: dict[str, int] = {}
        self.held: dict[str, dict] = {}
        self.instance: dict[str, str | None] = {}
        self.counter = 0
        self.topics = {"foo": 4, "bar": 2}
        self.topic_ids = {}                                # a re-created topic's new id

    def _forget(self, name: str) -> None:
        for d in (self.ids, self.epoch, self.held):
            d.pop(name, None)

    def _answer(self, name: str, response) -> None:
        assert response.error_code in EXPECTED_ERRORS, response
        if response.error_code == E.NONE:
            self.epoch[name] = response.member_epoch
            new = response_assignment(response)
            if new is not None:
                self.held[name] = new
        elif response.error_code in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID,
                                     E.FENCED_INSTANCE_ID, E.GROUP_ID_NOT_FOUND):
            self._forget(name)                       # the client abandons all and rejoins

    @rule(name=st.sampled_from(NAMES), sub=SUBSCRIPTIONS, static=st.booleans(),
          assignor=st.sampled_from([None, "range", "uniform"]))
    def join(self, name, sub, static, assignor):
        if name in self.ids and self.epoch.get(name, 0) >= 0:
            return
        self.counter += 1
        member_id = f"{name}-{self.counter}"
        instance = f"i-{name}" if static else None
        if name in self.ids:                         # it left temporarily: same instance
            instance = self.instance[name]
        topics, regex = sub
        response = self.h.hb(member_id, 0, topics=topics, regex=regex, instance=instance,
                             assignor=assignor, rebalance=20_000)
        assert response.error_code in EXPECTED_ERRORS, response
        if response.error_code == E.NONE:
            self.ids[name], self.instance[name] = member_id, instance
            self.held[name] = {}
            self._answer(name, response)

    @rule(name=st.sampled_from(NAMES), mode=st.sampled_from(["held", "held", "none", "empty",
                                                            "previous", "full"]))
    def heartbeat(self, name, mode):
        if name not in self.ids or self.epoch[name] < 0:
            return
        epoch, held = self.epoch[name], self.held.get(name, {})
        fields = dict(instance=self.instance[name])
        if mode == "held":
            fields["owned"] = owned(held)
        elif mode == "empty":
            fields["owned"] = ()
        elif mode == "previous":
            epoch, fields["owned"] = max(epoch - 1, 1), owned(held)
        elif mode == "full":
            member = self.h.cgroup().members.get(self.ids[name]) if "g" in \
                self.h.shard.consumer.groups else None
            topics = sorted(member.subscribed_topic_names) if member else ["foo"]
            fields.update(rebalance=20_000, topics=topics, owned=owned(held))
        self._answer(name, self.h.hb(self.ids[name], epoch, **fields))

    @rule(name=st.sampled_from(NAMES), temporary=st.booleans())
    def leave(self, name, temporary):
        if name not in self.ids or self.epoch[name] < 0:
            return
        instance = self.instance[name]
        epoch = -2 if temporary and instance is not None else -1
        response = self.h.hb(self.ids[name], epoch, instance=instance)
        assert response.error_code in EXPECTED_ERRORS, response
        if response.error_code == E.NONE and epoch == -2:
            self.epoch[name] = -2
        else:
            self._forget(name)

    @rule(name=st.sampled_from(NAMES), partition=st.integers(0, 3), offset=st.integers(0, 99),
          stale=st.booleans())
    def commit(self, name, partition, offset, stale):
        if name not in self.ids:
            return
        epoch = self.epoch[name] + (1 if stale else 0)
        self.h.commit(self.ids[name], epoch, {("foo", partition): offset})

    @rule(ms=st.sampled_from([0, 1_000, 5_000, 15_000, 25_000, 46_000, 130_000]))
    def advance(self, ms):
        self.h.advance(ms)

    @rule(topic=st.sampled_from(["foo", "bar", "baz"]), grow=st.integers(1, 2))
    def change_topics(self, topic, grow):
        """A topic is created or grows (a topic never shrinks)."""
        self.topics[topic] = self.topics.get(topic, 0) + grow
        self.h.set_topics(self.topic_ids, **self.topics)

    @rule(topic=st.sampled_from(["bar", "baz"]))
    def delete_topic(self, topic):
        """Deleted: if created again, it is another topic (another id)."""
        if self.topics.pop(topic, None) is not None:
            self.counter += 1
            self.topic_ids[topic] = uuid.uuid5(uuid.NAMESPACE_OID, f"{topic}#{self.counter}")
            self.h.set_topics(self.topic_ids, **self.topics)

    @precondition(lambda self: self.h.persisted)
    @rule(next_heartbeats=st.booleans())
    def check(self, next_heartbeats):
        check_replay(self.h, next_heartbeats=next_heartbeats)
        # the clients' view may now be behind: resynchronise with the coordinator
        group = self.h.shard.consumer.groups.get("g")
        for name, member_id in list(self.ids.items()):
            member = group.members.get(member_id) if group else None
            if member is None:
                self._forget(name)
            else:
                self.epoch[name] = member.member_epoch
                held = {}
                for a in (member.assigned, member.pending_revocation):
                    for t, ps in a.items():
                        held[t] = held.get(t, frozenset()) | ps
                self.held[name] = held

    @invariant()
    def members_are_in_a_known_state(self):
        group = self.h.shard.consumer.groups.get("g")
        if group is not None:
            assert all(m.state in MEMBER_STATES for m in group.members.values())

    def teardown(self):
        if self.h.persisted:
            check_replay(self.h)


ConsumerReplayEquivalence.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestConsumerReplayEquivalence = ConsumerReplayEquivalence.TestCase


def test_a_loaded_shard_rearms_sessions_and_revocation_timeouts():
    """onLoaded: every member gets a session timeout counted from the load, and a member still
    revoking its rebalance timeout."""
    h = ConsumerHarness(topics={"foo": 3})
    h.hb("m1", 0, rebalance=20_000, topics=["foo"])
    h.hb("m2", 0, rebalance=20_000, topics=["foo"])
    h.hb("m1", 2)
    assert h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    twin = ConsumerHarness(h.config, now=500_000)        # the node restarts much later
    twin.shard = replayed(h, now=500_000)
    twin.advance(19_999)
    assert set(twin.cgroup().members) == {"m1", "m2"}
    twin.advance(1)                                      # m1's revocation: 20 s after the load
    assert set(twin.cgroup().members) == {"m2"}
    twin.advance(24_999)
    assert set(twin.cgroup().members) == {"m2"}
    twin.advance(1)                                      # m2's session: 45 s after the load
    assert twin.cgroup().members == {}
