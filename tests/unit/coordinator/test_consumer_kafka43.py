"""What Kafka 4.3 changed in consumer groups, through the coordinator Harness.

* KAFKA-20268: a group starts at epoch 1 with an empty assignment at epoch 1;
* KIP-1263 / KAFKA-20291: target assignments are batched by group.consumer.assignment.interval.ms
  (a group config too), and stamped with when they were computed (KAFKA-20266);
* KIP-1251: each partition keeps the epoch it was assigned at, and a commit with an older member
  epoch is accepted for the partitions the member held then;
* KAFKA-19233: a member may rejoin with epoch 0 under its own id;
* KAFKA-20272 / 20273 / 20640: classic members in consumer groups;
* KAFKA-20431: ConsumerGroupDescribe counts the partitions being revoked as assigned.

The harness clock starts at 1 s: an assignment computed at time 0 would count as "time unknown",
which Kafka computes the next one at once after.
"""

from __future__ import annotations

import dataclasses

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.consumer import records as rec
from coordinator.consumer.group import GroupState
from coordinator.consumer.member import MemberState
from offsets_log.records import CONSUMER_GROUP_KEYS, GroupRecord
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E
from protocol.messages import DATA
from protocol.payloads import encode_payload

from tests.support.consumer_harness import (CURRENT, TARGET_EPOCH, ConsumerHarness, consumer_state,
                                            owned, parts, record_kinds, replayed, response_assignment,
                                            topic_id)
from tests.support.coordinator_harness import Harness

G = "g"
FOO, BAR = topic_id("foo"), topic_id("bar")
START = 1_000


def config(**overrides) -> CoordinatorConfig:
    return dataclasses.replace(CoordinatorConfig(), **overrides)


def harness(cfg: CoordinatorConfig | None = None, **topics: int) -> ConsumerHarness:
    return ConsumerHarness(cfg, now=START, topics=topics or {"foo": 4})


def two_members(h: ConsumerHarness) -> None:
    """m1 (from epoch 2) and m2 share foo's 4 partitions at epoch 3: m1 keeps 0-1 (assigned at
    epoch 2), m2 gets 2-3 (at epoch 3); the group's interval must be 0."""
    first_member(h)
    h.hb("m2", 0, topics=["foo"])
    h.hb("m1", 2, owned=h.owned_by("m1"))                       # told to revoke
    h.hb("m1", 2, owned=owned(h.member("m1").assigned))         # has revoked
    h.hb("m2", 3, owned=())


def first_member(h: ConsumerHarness, topics=("foo",)) -> int:
    """m1 joins and acknowledges everything; its epoch."""
    epoch = h.hb("m1", 0, topics=list(topics)).member_epoch
    assert h.hb("m1", epoch, owned=h.owned_by("m1")).error_code == E.NONE
    return epoch


# --- epochs of a new group ---------------------------------------------------------------------

def test_the_first_assignment_is_epoch_2_stamped_with_its_time():
    h = harness()
    response = h.hb("m1", 0, topics=["foo"])
    assert (response.member_epoch, response_assignment(response)) == (2, parts(foo=range(4)))
    group = h.cgroup()
    assert (group.group_epoch, group.assignment_epoch, group.assignment_timestamp) == (2, 2, START)
    (epoch_record,) = [r for r in h.records() if r.type == TARGET_EPOCH]
    assert (epoch_record.value.assignment_epoch, epoch_record.value.assignment_timestamp) == (2, START)


# --- batching ------------------------------------------------------------------------------------

def test_a_member_joining_within_the_interval_waits_for_the_next_assignment():
    h = harness()
    first_member(h)
    h.advance(500)
    second = h.hb("m2", 0, topics=["foo"])
    assert (second.member_epoch, response_assignment(second)) == (2, {})
    group = h.cgroup()
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 2, GroupState.ASSIGNING)
    h.advance(499)                                   # 999 ms after the last assignment
    same = h.hb("m1", 2, owned=h.owned_by("m1"))
    assert (same.member_epoch, same.assignment) == (2, None)
    assert h.cgroup().assignment_epoch == 2
    h.advance(1)                                     # the interval has passed: a new target
    revoking = h.hb("m1", 2, owned=h.owned_by("m1"))
    assert revoking.member_epoch == 2 and h.member("m1").state == MemberState.UNREVOKED_PARTITIONS
    group = h.cgroup()
    assert (group.assignment_epoch, group.assignment_timestamp) == (3, START + 1_000)
    assert h.hb("m2", 2, owned=()).member_epoch == 3                       # waits for the release
    assert h.hb("m1", 2, owned=owned(h.member("m1").assigned)).member_epoch == 3
    second = h.hb("m2", 3, owned=())
    assert response_assignment(second) and h.member("m2").state == MemberState.STABLE


def test_an_interval_of_0_assigns_at_every_group_epoch():
    h = harness(config(group_consumer_assignment_interval_ms=0))
    first_member(h)
    assert h.hb("m2", 0, topics=["foo"]).member_epoch == 3
    assert h.cgroup().assignment_epoch == 3


def test_the_group_config_sets_the_interval_within_the_broker_bounds():
    h = harness()
    h.shard.on_group_configs({G: {"consumer.assignment.interval.ms": "0"}})
    first_member(h)
    assert h.hb("m2", 0, topics=["foo"]).member_epoch == 3
    # a value beyond group.consumer.max.assignment.interval.ms counts as the maximum
    h.shard.on_group_configs({G: {"consumer.assignment.interval.ms": "999999"}})
    h.advance(14_999)
    h.hb("m3", 0, topics=["foo"])
    assert h.cgroup().assignment_epoch == 3
    h.advance(1)
    h.hb("m3", h.member("m3").member_epoch, owned=())
    assert h.cgroup().assignment_epoch == 4


def test_group_configs_set_the_heartbeat_interval_and_the_session():
    h = harness()
    h.shard.on_group_configs({G: {"consumer.heartbeat.interval.ms": "7000",
                                  "consumer.session.timeout.ms": "50000"}})
    assert h.hb("m1", 0, topics=["foo"]).heartbeat_interval_ms == 7_000
    h.advance(49_999)
    assert "m1" in h.cgroup().members
    h.advance(1)
    assert "m1" not in h.cgroup().members


def test_a_topic_left_is_revoked_without_waiting_for_the_next_assignment():
    h = harness(foo=2, bar=2)
    epoch = first_member(h, ("foo", "bar"))
    h.advance(100)
    response = h.hb("m1", epoch, topics=["foo"], owned=h.owned_by("m1"))
    assert h.cgroup().assignment_epoch == epoch                  # no new target yet
    assert (response.member_epoch, response_assignment(response)) == (epoch, parts(foo=[0, 1]))
    m1 = h.member("m1")
    assert (m1.state, dict(m1.pending_revocation)) == (MemberState.UNREVOKED_PARTITIONS, parts(bar=[0, 1]))


# --- fenced members rejoining ---------------------------------------------------------------------

def test_a_fenced_member_rejoins_with_epoch_0():
    h = harness()
    epoch = first_member(h)
    assert h.hb("m1", epoch + 1).error_code == E.FENCED_MEMBER_EPOCH
    again = h.hb("m1", 0, topics=["foo"])
    assert (again.error_code, again.member_epoch, response_assignment(again)) == (
        E.NONE, epoch, parts(foo=range(4)))
    assert h.cgroup().group_epoch == epoch


# --- assignment epochs and commits (KIP-1251) ---------------------------------------------------

def commit_error(h: ConsumerHarness, member: str, epoch: int, partitions, version: int = 9) -> int:
    response = h.replies[h.commit(member, epoch, {("foo", p): 1 for p in partitions}, version=version)]
    (code,) = {p.error_code for t in response.topics for p in t.partitions}
    return code


def test_partitions_keep_the_epoch_they_were_assigned_at():
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4)
    two_members(h)
    m1 = h.member("m1")
    assert m1.member_epoch == 3
    assert {m1.assignment_epoch(FOO, p) for p in m1.assigned[FOO]} == {2}
    m2 = h.member("m2")
    assert {m2.assignment_epoch(FOO, p) for p in m2.assigned[FOO]} == {3}


@pytest.mark.parametrize("member,epoch,partitions,code", [
    pytest.param("m1", 3, [0, 1], E.NONE, id="the current epoch"),
    pytest.param("m1", 2, [0, 1], E.NONE, id="an older epoch, partitions held since then"),
    pytest.param("m1", 1, [0], E.STALE_MEMBER_EPOCH, id="older than the partition's assignment"),
    pytest.param("m2", 2, [2], E.STALE_MEMBER_EPOCH, id="a partition assigned after that epoch"),
    pytest.param("m1", 2, [0, 2], E.STALE_MEMBER_EPOCH, id="a partition it does not hold"),
    pytest.param("m1", 4, [0], E.STALE_MEMBER_EPOCH, id="a newer epoch"),
    pytest.param("m9", 3, [0], E.UNKNOWN_MEMBER_ID, id="an unknown member"),
])
def test_commits_with_an_older_epoch(member, epoch, partitions, code):
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4)
    two_members(h)
    assert h.member("m1").assigned == parts(foo=[0, 1]) and h.member("m2").assigned == parts(foo=[2, 3])
    assert commit_error(h, member, epoch, partitions) == code


def test_a_revoking_member_may_still_commit_what_it_revokes():
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4)
    first_member(h)
    h.hb("m2", 0, topics=["foo"])
    h.hb("m1", 2, owned=h.owned_by("m1"))            # revoking 2 and 3, still at epoch 2
    assert commit_error(h, "m1", 2, [2, 3]) == E.NONE
    assert commit_error(h, "m1", 1, [2]) == E.STALE_MEMBER_EPOCH


def test_a_static_member_that_left_fences_its_old_commits():
    """Its partitions go to epoch 0, for its instance's next member, which holds them from
    epoch 0 on; the old member id is unknown once replaced."""
    h = harness()
    epoch = h.hb("m1", 0, topics=["foo"], instance="i1").member_epoch
    h.hb("m1", -2, instance="i1")
    assert {h.member("m1").assignment_epoch(FOO, p) for p in range(4)} == {0}
    h.hb("m1b", 0, topics=["foo"], instance="i1")
    assert commit_error(h, "m1", epoch, [0]) == E.UNKNOWN_MEMBER_ID
    assert h.member("m1b").member_epoch == epoch
    assert commit_error(h, "m1b", 1, [0]) == E.NONE       # an older epoch: held since epoch 0


def txn_commit_error(h: ConsumerHarness, member: str, epoch: int, topic: str = "foo") -> int:
    api = ApiKey.TXN_OFFSET_COMMIT
    cls = REQUESTS[api].cls
    request = cls(transactional_id="t", group_id=G, producer_id=5, producer_epoch=0, generation_id=epoch,
                  member_id=member, topics=(cls.TxnOffsetCommitRequestTopic(name=topic, partitions=(
                      cls.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                          partition_index=0, committed_offset=1),)),))
    response = h.replies[h.send(api, 3, request)]
    return response.topics[0].partitions[0].error_code


def test_transactional_commits_with_an_older_epoch():
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4, bar=1)
    two_members(h)
    assert txn_commit_error(h, "m1", 2) == E.NONE
    assert txn_commit_error(h, "m1", 1) == E.ILLEGAL_GENERATION
    assert txn_commit_error(h, "m1", 2, topic="gone") == E.ILLEGAL_GENERATION
    assert txn_commit_error(h, "", -1) == E.NONE      # a commit that names no member


def test_assignment_epochs_survive_replay_and_older_records_get_the_member_epoch():
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4)
    two_members(h)
    fresh = replayed(h)
    assert fresh.consumer.groups[G].members["m1"].assigned_at == h.member("m1").assigned_at
    assert fresh.consumer.groups[G].assignment_timestamp == h.cgroup().assignment_timestamp
    # a record of our previous version: no assignment epochs, no assignment timestamp
    cls = CONSUMER_GROUP_KEYS[CURRENT][1].cls
    old = Harness()
    old.shard.replay(rec.group_epoch("old", 5))
    old.shard.replay(rec.target_epoch("old", 5))
    old.shard.replay(GroupRecord(CURRENT, "old", "m", cls(
        member_epoch=5, previous_member_epoch=4, state=0,
        assigned_partitions=(cls.TopicPartitions(topic_id=FOO, partitions=(0, 1)),),
        partitions_pending_revocation=())))
    group = old.shard.consumer.groups["old"]
    assert group.members["m"].assigned_at == {(FOO, 0): 5, (FOO, 1): 5}
    assert (group.group_epoch, group.assignment_epoch, group.assignment_timestamp) == (5, 5, 0)


# --- ConsumerGroupDescribe -------------------------------------------------------------------------

def test_describe_counts_the_partitions_being_revoked():
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4)
    first_member(h)
    h.hb("m2", 0, topics=["foo"])
    h.hb("m1", 2, owned=h.owned_by("m1"))
    api = ApiKey.CONSUMER_GROUP_DESCRIBE
    response = h.replies[h.send(api, 1, REQUESTS[api].cls(group_ids=(G,)))]
    (m1,) = [m for m in response.groups[0].members if m.member_id == "m1"]
    assert [p for t in m1.assignment.topic_partitions for p in t.partitions] == [0, 1, 2, 3]
    assert [p for t in m1.target_assignment.topic_partitions for p in t.partitions] == [0, 1]


# --- classic members --------------------------------------------------------------------------------

def classic_metadata(*topics: str) -> bytes:
    subscription = DATA["ConsumerProtocolSubscription"]
    return encode_payload(subscription, 0, subscription.cls(topics=topics))


def classic_join(h: ConsumerHarness, member_id: str = "") -> object:
    return h.replies[h.join(member_id, protocols=(("range", classic_metadata("foo")),))]


def test_classic_members_are_refused_when_no_migration_is_allowed():
    h = harness(config(group_consumer_migration_policy="disabled"))
    first_member(h)
    response = classic_join(h)
    assert (response.error_code, response.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


def test_a_classic_member_rejoins_only_for_a_new_target_assignment():
    h = harness()
    first_member(h)
    member_id = classic_join(h).member_id
    joined = classic_join(h, member_id)
    assert (joined.error_code, joined.generation_id) == (E.NONE, 2)
    assert h.cgroup().group_epoch == 3                   # its assignment waits for the interval
    assert h.replies[h.heartbeat(member_id, 2)].error_code == E.NONE
    h.advance(1_000)
    h.hb("m1", 2, owned=h.owned_by("m1"))                # computes the target of epoch 3
    assert h.replies[h.heartbeat(member_id, 2)].error_code == E.REBALANCE_IN_PROGRESS


def test_a_malformed_subscription_is_an_unknown_server_error():
    """Kafka 4.3.1 throws an IllegalStateException (INCONSISTENT_GROUP_PROTOCOL came after)."""
    h = harness()
    first_member(h)
    member_id = classic_join(h).member_id
    response = h.replies[h.join(member_id, protocols=(("range", b"\x00\x09garbage"),))]
    assert (response.error_code, response.member_id) == (E.UNKNOWN_SERVER_ERROR, "")


def downgrade_by_static_replacement(h: ConsumerHarness, topics=("foo",)):
    """m1 (consumer protocol, instance i1) and a classic member; then i1 comes back with the
    classic protocol: the group becomes a classic group. The classic group."""
    h.hb("m1", 0, topics=["foo"], instance="i1")
    classic_id = classic_join(h).member_id
    assert classic_join(h, classic_id).error_code == E.NONE
    token = h.join("", instance="i1", protocols=(("range", classic_metadata(*topics)),))
    assert h.replies[token].error_code == E.NONE
    assert G not in h.shard.consumer.groups
    return h.group_state()


def test_a_downgrade_with_a_current_assignment_keeps_it():
    state = downgrade_by_static_replacement(harness(config(group_consumer_assignment_interval_ms=0))).state
    assert state.value == "Stable"


def test_a_downgrade_while_the_next_assignment_waits_rebalances():
    """KAFKA-20273: the classic member's join bumped the group epoch within the interval."""
    assert downgrade_by_static_replacement(harness()).state.value == "PreparingRebalance"


def test_a_downgrade_with_a_new_subscription_rebalances():
    h = harness(config(group_consumer_assignment_interval_ms=0), foo=4, bar=2)
    assert downgrade_by_static_replacement(h, ("foo", "bar")).state.value == "PreparingRebalance"


# --- LeaveGroup naming members of a consumer group (the Admin's removeMembersFromConsumerGroup) -----

def leave_answers(h: ConsumerHarness, *members) -> list[tuple]:
    return [(m.member_id, m.group_instance_id, m.error_code) for m in h.replies[h.leave(*members)].members]


def test_leave_group_removes_members_of_both_protocols_at_one_epoch():
    """Kafka's classicGroupLeaveToConsumerGroup: any member leaves (consumer protocol or
    classic, by member id or instance id), each answer echoes the identity named, and
    consumerGroupFenceMembers removes them all with one group epoch bump."""
    h = harness()
    first_member(h)
    h.hb("m2", 0, topics=["foo"], instance="i2")
    classic_id = classic_join(h).member_id
    assert classic_join(h, classic_id).error_code == E.NONE
    epoch, start = h.cgroup().group_epoch, len(h.persisted)
    assert leave_answers(h, "m1", "nobody", ("other", "i2"), ("", "i2"), ("", "i9"), classic_id, "m1") == [
        ("m1", None, E.NONE), ("nobody", None, E.UNKNOWN_MEMBER_ID), ("other", "i2", E.FENCED_INSTANCE_ID),
        ("", "i2", E.NONE), ("", "i9", E.UNKNOWN_MEMBER_ID), (classic_id, None, E.NONE), ("m1", None, E.NONE)]
    group = h.cgroup()
    assert (group.members, group.group_epoch, group.state) == ({}, epoch + 1, GroupState.EMPTY)
    kinds = record_kinds(h.records(start))
    assert kinds.count((rec.GROUP_EPOCH, None, False)) == 1 and kinds[-1][0] == rec.GROUP_EPOCH
    assert kinds[:3] == [(rec.CURRENT, "m1", True), (rec.TARGET_MEMBER, "m1", True), (rec.MEMBER, "m1", True)]
    assert ("consumer-session", G, "m1") not in h.shard.timers
    assert consumer_state(replayed(h)) == consumer_state(h.shard)
    assert leave_answers(h, "m1") == [("m1", None, E.UNKNOWN_MEMBER_ID)]
    assert h.cgroup().group_epoch == epoch + 1                  # nothing left: no bump


def test_leave_group_before_v3_removes_a_consumer_protocol_member():
    h = harness()
    first_member(h)
    h.hb("m2", 0, topics=["foo"])
    assert h.replies[h.leave("m2", version=0)].error_code == E.NONE
    assert set(h.cgroup().members) == {"m1"}


def test_consumer_protocol_members_leaving_together_downgrade_the_group():
    """validateOnlineDowngradeWithFencedMembers: only classic members would remain."""
    h = harness()
    first_member(h)
    h.hb("m2", 0, topics=["foo"])
    classic_id = classic_join(h).member_id
    assert classic_join(h, classic_id).error_code == E.NONE
    assert [e for *_, e in leave_answers(h, "m1", "m2")] == [E.NONE, E.NONE]
    assert G not in h.shard.consumer.groups
    classic = h.group_state()
    assert (list(classic.members), classic.state.value) == ([classic_id], "PreparingRebalance")


def test_a_classic_member_leaving_a_group_of_classic_members_downgrades_it():
    """Kafka 4.3 asks only that every member but the fenced ones use the classic protocol: a
    consumer group left with classic members only (too many to downgrade when the last
    consumer-protocol member left) becomes a classic group once few enough remain."""
    h = harness(config(group_max_size=2))
    first_member(h)
    ids = []
    for _ in range(3):
        ids.append(classic_join(h).member_id)
        assert classic_join(h, ids[-1]).error_code == E.NONE
    assert [e for *_, e in leave_answers(h, "m1")] == [E.NONE]
    assert set(h.cgroup().members) == set(ids)                  # 3 > group.max.size
    assert [e for *_, e in leave_answers(h, ids[0])] == [E.NONE]
    assert G not in h.shard.consumer.groups
    assert set(h.group_state().members) == set(ids[1:])
