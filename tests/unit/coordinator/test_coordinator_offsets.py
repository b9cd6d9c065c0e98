"""OffsetCommit, OffsetFetch, OffsetDelete and offset retention, against Kafka's checks in order.

Every case drives a real Shard through tests/support/coordinator_harness.py (deterministic time);
the expected codes are those of Kafka's
OffsetMetadataManager, ClassicGroup.validateOffsetCommit / offsetExpirationCondition /
isSubscribedToTopic and KafkaApis (OffsetFetch shaping).
"""

from __future__ import annotations

import pytest

from coordinator.actions import Persist, Reply
from coordinator.config import CoordinatorConfig
from coordinator.classic.state import GroupState as S
from offsets_log.records import (GroupMetadataTombstone, OffsetCommit, OffsetCommitTombstone,
                                 decode, decode_record)
from protocol import DATA, REQUESTS
from protocol.api_keys import ApiKey
from protocol.payloads import encode_payload

from tests.support.coordinator_harness import COMMIT, Harness

FETCH, DELETE_OFFSETS = 9, 47
OffsetCommitRequest = REQUESTS[COMMIT].cls
OffsetFetchRequest = REQUESTS[FETCH].cls
OffsetDeleteRequest = REQUESTS[DELETE_OFFSETS].cls
SUBSCRIPTION = DATA["ConsumerProtocolSubscription"]

BIG_SESSION = dict(session=1_800_000, rebalance=1_800_000)    # members that never time out here


def config(**kw) -> CoordinatorConfig:
    return CoordinatorConfig(offsets_topic_num_partitions=1, **kw)   # every group on shard 0


def subscription(*topics: str) -> bytes:
    """Real ConsumerProtocolSubscription v1 bytes, as a Java consumer sends them."""
    return encode_payload(SUBSCRIPTION, 1, SUBSCRIPTION.cls(topics=topics, user_data=None,
                                                            owned_partitions=()))


def commit_request(group="g", generation=-1, member="", instance=None, retention=-1, **parts):
    """``parts``: topic=[(partition, offset, metadata[, leader epoch])]."""
    tcls = OffsetCommitRequest.OffsetCommitRequestTopic
    pcls = tcls.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=instance, retention_time_ms=retention,
        topics=tuple(tcls(name=t, partitions=tuple(
            pcls(partition_index=p[0], committed_offset=p[1], committed_metadata=p[2],
                 committed_leader_epoch=p[3] if len(p) > 3 else -1) for p in ps))
            for t, ps in (parts or {"t": [(0, 10, "")]}).items()))


def commit(h: Harness, version=9, **kw):
    token = h.send(COMMIT, version, commit_request(**kw))
    return h.replies[token]


def codes(response) -> dict:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def fetch_request(version, groups):
    """``groups``: {group id: {topic: [partitions]} or None}."""
    if version >= 8:
        gcls = OffsetFetchRequest.OffsetFetchRequestGroup
        tcls = gcls.OffsetFetchRequestTopics
        return OffsetFetchRequest(groups=tuple(
            gcls(group_id=g, topics=None if ts is None else tuple(
                tcls(name=t, partition_indexes=tuple(ps)) for t, ps in ts.items()))
            for g, ts in groups.items()))
    (g, ts), = groups.items()
    tcls = OffsetFetchRequest.OffsetFetchRequestTopic
    return OffsetFetchRequest(group_id=g, topics=None if ts is None else tuple(
        tcls(name=t, partition_indexes=tuple(ps)) for t, ps in ts.items()))


def fetch(h: Harness, version, groups):
    return h.replies[h.send(FETCH, version, fetch_request(version, groups))]


def fetched(topics) -> dict:
    """{(topic, partition): (offset, leader epoch, metadata, error)}"""
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata,
                                          p.error_code)
            for t in topics for p in t.partitions}


def offset_delete(h: Harness, group="g", **topics):
    tcls = OffsetDeleteRequest.OffsetDeleteRequestTopic
    request = OffsetDeleteRequest(group_id=group, topics=tuple(
        tcls(name=t, partitions=tuple(tcls.OffsetDeleteRequestPartition(partition_index=p) for p in ps))
        for t, ps in topics.items()))
    return h.replies[h.send(DELETE_OFFSETS, 0, request)]


def offsets_of(h: Harness, group="g") -> dict:
    return {k: c.offset for k, c in h.shard.offsets.get(group, {}).items()}


# --- groups in each state ----------------------------------------------------------------------

def static_stable(h: Harness, instance="i", protocols=(("range", b"meta"),)) -> str:
    token = h.join(instance=instance, protocols=protocols, **BIG_SESSION)
    h.advance(h.config.group_initial_rebalance_delay_ms)
    member = h.replies[token].member_id
    h.sync(member, 1, assignments={member: b"a"})
    return member


def in_state(h: Harness, state: str, protocols=(("range", b"meta"),), protocol_type="consumer"):
    """Put group "g" into ``state``; returns (a member id or None, the group's generation)."""
    if state == "missing":
        return None, -1
    if state == "simple":
        commit(h)
        return None, 0
    member = h.new_member(protocols=protocols, protocol_type=protocol_type, **BIG_SESSION)
    token = h.join(member, protocols=protocols, protocol_type=protocol_type, **BIG_SESSION)
    h.advance(h.config.group_initial_rebalance_delay_ms)
    gen = h.replies[token].generation_id
    synced = h.sync(member, gen, assignments={member: b"assigned"}, protocol_type=protocol_type)
    assert h.replies[synced].error_code == 0
    if state == "Stable":
        return member, gen
    if state == "Empty":
        h.leave(member)
        return None, gen + 1
    if state == "PreparingRebalance":       # a v3 newcomer is added at once; the old member lags
        h.join(version=3, protocols=protocols, protocol_type=protocol_type, **BIG_SESSION)
        return member, gen
    if state == "CompletingRebalance":      # the leader rejoins: everyone joined, join completes
        h.join(member, protocols=protocols, protocol_type=protocol_type, **BIG_SESSION)
        return member, gen + 1
    if state == "Dead":
        h.group_state().state = S.DEAD      # only reachable mid-removal; validation must see it
        return member, gen
    raise AssertionError(state)


# --- OffsetCommit ------------------------------------------------------------------------------

NONE, UNKNOWN_MEMBER, ILLEGAL_GEN, REBALANCING, FENCED = 0, 25, 22, 27, 82

# (state, version, generation, member: "member" | "" | "other", instance, expected)
COMMIT_CASES = [
    ("missing", 9, -1, "", None, NONE),                      # a simple commit creates the group
    ("missing", 2, -1, "", None, NONE),
    ("missing", 9, 0, "other", None, 69),                    # v9+: GROUP_ID_NOT_FOUND
    ("missing", 8, 0, "other", None, ILLEGAL_GEN),           # <= v8: ILLEGAL_GENERATION
    ("missing", 2, 5, "", None, ILLEGAL_GEN),
    ("Dead", 9, 1, "member", None, 15),
    ("Dead", 9, -1, "", None, 15),
    ("simple", 9, -1, "", None, NONE),
    ("simple", 9, -1, "other", None, NONE),                  # generation < 0 and Empty: accepted
    ("simple", 9, 0, "other", None, UNKNOWN_MEMBER),
    ("Empty", 9, -1, "", None, NONE),
    ("Empty", 9, 2, "other", None, UNKNOWN_MEMBER),
    ("Empty", 7, -1, "", "i", NONE),                         # Empty with generation -1 wins first
    ("Stable", 9, 1, "member", None, NONE),
    ("Stable", 9, 0, "member", None, ILLEGAL_GEN),
    ("Stable", 9, 2, "member", None, ILLEGAL_GEN),
    ("Stable", 9, 1, "other", None, UNKNOWN_MEMBER),          # member checked before generation
    ("Stable", 9, 7, "other", None, UNKNOWN_MEMBER),
    ("Stable", 9, -1, "", None, UNKNOWN_MEMBER),              # an admin commit needs an Empty group
    ("Stable", 9, -1, "member", None, ILLEGAL_GEN),           # a member id forces validation
    ("Stable", 7, 1, "member", "i", UNKNOWN_MEMBER),          # unknown instance id
    ("PreparingRebalance", 9, 1, "member", None, NONE),       # the old generation may commit
    ("PreparingRebalance", 9, 2, "member", None, ILLEGAL_GEN),
    ("CompletingRebalance", 9, 2, "member", None, REBALANCING),
    ("CompletingRebalance", 9, 1, "member", None, ILLEGAL_GEN),    # generation before state
    ("CompletingRebalance", 9, 2, "other", None, UNKNOWN_MEMBER),
]


@pytest.mark.parametrize("state,version,generation,who,instance,expected", COMMIT_CASES)
def test_offset_commit_checks(state, version, generation, who, instance, expected):
    h = Harness(config())
    member, _ = in_state(h, state)
    member_id = {"member": member, "": "", "other": "someone-else"}[who]
    before = len(h.persisted)
    response = commit(h, version, generation=generation, member=member_id, instance=instance,
                      t=[(0, 42, "m"), (1, 43, None)], u=[(3, 44, "")])
    assert set(codes(response).values()) == {expected}
    written = [decode_record(r.key, r.value) for r in h.persisted[before:]]
    if expected == NONE:
        assert offsets_of(h) == {("t", 0): 42, ("t", 1): 43, ("u", 3): 44}
        assert [(w.topic, w.partition, w.offset) for w in written] == [("t", 0, 42), ("t", 1, 43),
                                                                         ("u", 3, 44)]
        assert h.group_state().state != S.DEAD
    else:
        assert written == [] and offsets_of(h) == ({("t", 0): 10} if state == "simple" else {})


def test_simple_commit_creates_an_empty_simple_group():
    h = Harness(config())
    commit(h, group="solo")
    group = h.shard.groups["solo"]
    assert (group.state, group.protocol_type, group.generation) == (S.EMPTY, "", 0)


def test_fenced_static_member_commit():
    h = Harness(config())
    member = static_stable(h)
    assert set(codes(commit(h, 7, generation=1, member="stale-id", instance="i")).values()) == {FENCED}
    assert set(codes(commit(h, 7, generation=1, member=member, instance="i")).values()) == {NONE}


def test_not_coordinator():
    h = Harness(CoordinatorConfig(), group="g")          # 50 shards: most groups live elsewhere
    other = next(g for g in (f"x{i}" for i in range(100)) if not h.shard.owns(g))
    assert set(codes(commit(h, group=other)).values()) == {16}


def test_null_group_id_is_invalid_but_empty_string_is_a_group():
    h = Harness(config())
    assert set(codes(commit(h, group=None)).values()) == {24}
    assert set(codes(commit(h, group="")).values()) == {NONE}
    assert "" in h.shard.groups


def test_metadata_limit_counts_utf16_units_per_partition():
    h = Harness(config(offset_metadata_max_bytes=4))
    response = commit(h, t=[(0, 1, "abcd"), (1, 2, "abcde"), (2, 3, "ab\U0001F600"),
                            (3, 4, "abc\U0001F600"), (4, 5, "\u00e9\u00e9\u00e9\u00e9"), (5, 6, None)])
    # "abc😀" is 4 Python characters but 5 UTF-16 units; "éééé" is 8 UTF-8 bytes but 4 units.
    assert codes(response) == {("t", 0): 0, ("t", 1): 12, ("t", 2): 0, ("t", 3): 12,
                               ("t", 4): 0, ("t", 5): 0}
    assert offsets_of(h) == {("t", 0): 1, ("t", 2): 3, ("t", 4): 5, ("t", 5): 6}
    assert h.shard.offsets["g"][("t", 5)].metadata == ""       # null metadata is stored as ""


def test_all_partitions_too_large_writes_nothing_but_creates_the_group():
    h = Harness(config(offset_metadata_max_bytes=1))
    response = commit(h, t=[(0, 1, "xx")])
    assert codes(response) == {("t", 0): 12}
    assert h.persisted == [] and h.shard.groups["g"].state == S.EMPTY


@pytest.mark.parametrize("version,retention,expire,value_version", [
    (2, 5_000, 105_000, 1), (4, 0, 100_000, 1), (2, -1, None, 3), (5, -1, None, 3), (9, -1, None, 3)])
def test_retention_time_becomes_an_expire_timestamp(version, retention, expire, value_version):
    h = Harness(config(), now=100_000)
    commit(h, version, retention=retention, t=[(0, 7, "md", 3)])
    record = decode(h.persisted[-1])
    assert (record.expire_ts, record.value_version, record.commit_ts) == (expire, value_version, 100_000)
    assert h.shard.offsets["g"][("t", 0)].expire_ts == expire
    # value v1 has no leader epoch field (and v2-4 requests carry none)
    assert record.leader_epoch == (-1 if value_version == 1 else 3)


def test_persist_comes_before_the_reply():
    h = Harness(config())
    start = len(h.actions)
    commit(h)
    assert [type(a) for a in h.actions[start:]] == [Persist, Reply]
    start = len(h.actions)
    commit(h, generation=3, member="x")                      # refused: reply only
    assert [type(a) for a in h.actions[start:]] == [Reply]


def test_commit_keeps_a_stable_member_alive():
    h = Harness(config())
    ids, gen = h.stable_group(1, session=10_000)
    for _ in range(5):
        h.advance(8_000)
        commit(h, generation=gen, member=ids[0])
    assert ids[0] in h.group_state().members
    h.advance(10_000)
    assert ids[0] not in h.group_state().members


# --- OffsetFetch -------------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(1, 10))
def test_fetch_requested_partitions(version):
    h = Harness(config())
    commit(h, t=[(0, 5, "meta", 9), (1, 6, "")])
    response = fetch(h, version, {"g": {"t": [0, 2]}, "nope": {"t": [0]}} if version >= 8
                     else {"g": {"t": [0, 2]}})
    epoch = 9 if version >= 5 else -1
    if version >= 8:
        g, nope = response.groups
        assert (g.group_id, g.error_code, nope.group_id, nope.error_code) == ("g", 0, "nope", 0)
        assert fetched(g.topics) == {("t", 0): (5, epoch, "meta", 0), ("t", 2): (-1, -1, "", 0)}
        assert fetched(nope.topics) == {("t", 0): (-1, -1, "", 0)}   # unknown group: no error
    else:
        assert response.error_code == 0
        assert fetched(response.topics) == {("t", 0): (5, epoch, "meta", 0), ("t", 2): (-1, -1, "", 0)}


@pytest.mark.parametrize("version", [1, 3, 7, 8, 9])
def test_fetch_unknown_group_is_not_an_error(version):
    h = Harness(config())
    response = fetch(h, version, {"ghost": {"t": [0, 1]}})
    topics = response.groups[0].topics if version >= 8 else response.topics
    error = response.groups[0].error_code if version >= 8 else response.error_code
    assert error == 0 and fetched(topics) == {("t", 0): (-1, -1, "", 0), ("t", 1): (-1, -1, "", 0)}


@pytest.mark.parametrize("version", [2, 7, 8])
def test_fetch_all_committed(version):
    h = Harness(config())
    commit(h, t=[(1, 6, ""), (0, 5, "")], u=[(0, 7, "x")])
    response = fetch(h, version, {"g": None, "ghost": None} if version >= 8 else {"g": None})
    topics = response.groups[0].topics if version >= 8 else response.topics
    assert fetched(topics) == {("t", 0): (5, -1, "", 0), ("t", 1): (6, -1, "", 0),
                               ("u", 0): (7, -1, "x", 0)}
    if version >= 8:
        assert response.groups[1].topics == ()


def test_fetch_after_the_group_was_deleted_sees_nothing():
    h = Harness(config())
    commit(h)
    h.send(ApiKey.DELETE_GROUPS, 2, REQUESTS[ApiKey.DELETE_GROUPS].cls(groups_names=("g",)))
    assert fetched(fetch(h, 8, {"g": {"t": [0]}}).groups[0].topics) == {("t", 0): (-1, -1, "", 0)}
    assert fetch(h, 8, {"g": None}).groups[0].topics == ()


@pytest.mark.parametrize("version", [1, 2, 7, 8])
def test_fetch_group_level_error_carries_no_topics(version):
    """Kafka answers a group error with the group's ErrorCode and no topics (KafkaApis
    fetchOffsetsForGroup); v2-7 show it at the top level, v1 has nowhere to show it."""
    h = Harness(CoordinatorConfig(), group="g")
    other = next(g for g in (f"x{i}" for i in range(100)) if not h.shard.owns(g))
    response = fetch(h, version, {other: {"t": [0]}})
    if version >= 8:
        assert (response.groups[0].error_code, response.groups[0].topics) == (16, ())
    else:
        assert (response.error_code, response.topics) == (16 if version >= 2 else 0, ())


# --- OffsetDelete ------------------------------------------------------------------------------

def test_offset_delete_group_errors():
    h = Harness(config())
    assert offset_delete(h, group="", t=[0]).error_code == 24
    assert offset_delete(h, group="ghost", t=[0]).error_code == 69
    in_state(h, "Stable", protocol_type="connect")
    assert offset_delete(h, t=[0]).error_code == 68            # active and not "consumer"


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "CompletingRebalance"])
def test_offset_delete_active_consumer_group_uses_subscriptions(state):
    h = Harness(config())
    member, gen = in_state(h, "Stable", protocols=(("range", subscription("a")),))
    commit(h, generation=gen, member=member, a=[(0, 1, "")], b=[(0, 2, ""), (1, 3, "")])
    in_state_after_stable(h, member, state)
    before = len(h.persisted)
    response = offset_delete(h, a=[0], b=[0, 5])
    assert response.error_code == 0
    assert {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions} \
        == {("a", 0): 86, ("b", 0): 0, ("b", 5): 0}
    assert [decode(r) for r in h.persisted[before:]] == [OffsetCommitTombstone("g", "b", 0)]
    assert offsets_of(h) == {("a", 0): 1, ("b", 1): 3}


def in_state_after_stable(h: Harness, member: str, state: str) -> None:
    protocols = (("range", subscription("a")),)
    if state == "PreparingRebalance":
        h.join(version=3, protocols=(("range", subscription("c")),), **BIG_SESSION)
    elif state == "CompletingRebalance":
        h.join(member, protocols=protocols, **BIG_SESSION)
    assert h.group_state().state.value == state


def test_offset_delete_empty_group_deletes_anything():
    h = Harness(config())
    member, gen = in_state(h, "Stable", protocols=(("range", subscription("a")),))
    commit(h, generation=gen, member=member, a=[(0, 1, "")])
    h.leave(member)
    response = offset_delete(h, a=[0])
    assert response.topics[0].partitions[0].error_code == 0 and offsets_of(h) == {}


def test_offset_delete_unparseable_subscription_protects_every_topic():
    h = Harness(config())
    member, gen = in_state(h, "Stable", protocols=(("range", b"\x00"),))
    commit(h, generation=gen, member=member, z=[(0, 1, "")])
    assert offset_delete(h, z=[0]).topics[0].partitions[0].error_code == 86
    assert offsets_of(h) == {("z", 0): 1}


def test_offset_delete_first_rebalance_knows_no_subscriptions():
    h = Harness(config())
    h.join(version=3, protocols=(("range", subscription("a")),))     # PreparingRebalance, new group
    commit(h, group="g", generation=-1)                                # refused: group not Empty
    assert offset_delete(h, q=[0]).topics[0].partitions[0].error_code == 86


def test_offset_delete_after_empty_uses_the_empty_subscription_set():
    """Kafka recomputes subscriptions when the group turns Empty; a rebalance from Empty starts
    with none, so nothing is protected until the next generation completes."""
    h = Harness(config())
    member, gen = in_state(h, "Stable", protocols=(("range", subscription("a")),))
    commit(h, generation=gen, member=member, a=[(0, 1, "")])
    h.leave(member)
    h.join(version=3, protocols=(("range", subscription("a")),))
    assert h.group_state().state == S.PREPARING_REBALANCE
    assert offset_delete(h, a=[0]).topics[0].partitions[0].error_code == 0


def test_subscriptions_parsed_as_the_v0_prefix():
    h = Harness(config())
    v3 = encode_payload(SUBSCRIPTION, 3, SUBSCRIPTION.cls(topics=("a",), user_data=b"u",
                                                         owned_partitions=(), generation_id=4,
                                                         rack_id="r"))
    future = b"\x00\x07" + v3[2:] + b"unknown future fields"
    in_state(h, "Stable", protocols=(("range", future),))
    assert h.group_state().subscribed_topics == frozenset({"a"})


# --- retention (KIP-211, §5.4) -----------------------------------------------------------------

MINUTE = 60_000
INTERVAL = 10_000


def swept_harness(**kw) -> Harness:
    h = Harness(config(offsets_retention_minutes=1, offsets_retention_check_interval_ms=INTERVAL, **kw))
    h._collect(h.shard.loaded(h.now))                 # a loaded shard starts its sweep timer
    return h


def test_sweep_reschedules_every_interval():
    h = swept_harness()
    for n in range(1, 4):
        assert h.shard.next_deadline() == n * INTERVAL
        h.advance(INTERVAL)


def test_simple_group_offsets_expire_exactly_at_retention_since_commit():
    h = swept_harness()
    commit(h, t=[(0, 1, "")])                          # committed at 0
    h.advance(1)
    commit(h, t=[(1, 2, "")])                          # committed at 1
    h.advance(MINUTE - 1)                              # sweep at 60 000: 60 000 - 0 >= retention
    assert offsets_of(h) == {("t", 1): 2}
    assert [decode(r) for r in h.persisted[-1:]] == [OffsetCommitTombstone("g", "t", 0)]
    h.advance(INTERVAL)                                # sweep at 70 000: the other one, then the group
    assert offsets_of(h) == {} and "g" not in h.shard.groups
    assert [decode(r) for r in h.persisted[-2:]] == [OffsetCommitTombstone("g", "t", 1),
                                                             GroupMetadataTombstone("g")]


@pytest.mark.parametrize("retention,gone_at", [(15_000, 20_000), (20_000, 20_000), (20_001, 30_000)])
def test_explicit_expire_timestamp_wins(retention, gone_at):
    h = swept_harness()
    commit(h, 2, retention=retention)
    h.advance(gone_at - INTERVAL)
    assert offsets_of(h) != {}
    h.advance(INTERVAL)
    assert offsets_of(h) == {}


def test_empty_group_expires_from_when_it_became_empty():
    h = swept_harness()
    member, gen = in_state(h, "Stable", protocols=(("range", subscription("t")),))
    commit(h, generation=gen, member=member)           # committed at 3 000
    h.advance(50_000 - h.now)
    h.leave(member)                                    # Empty at 50 000
    h.advance(100_000 - h.now)                         # commit is 97 s old, Empty only 50 s
    assert offsets_of(h) != {} and h.group_state().state == S.EMPTY
    h.advance(10_000)                                  # sweep at 110 000: Empty for 60 s
    assert offsets_of(h) == {} and "g" not in h.shard.groups


def test_stable_consumer_group_expires_only_unsubscribed_topics():
    h = swept_harness()
    member, gen = in_state(h, "Stable", protocols=(("range", subscription("a")),))
    commit(h, generation=gen, member=member, a=[(0, 1, "")], b=[(0, 2, "")])
    h.advance(10 * MINUTE)
    assert offsets_of(h) == {("a", 0): 1} and h.group_state().state == S.STABLE


@pytest.mark.parametrize("setup", ["PreparingRebalance", "CompletingRebalance", "connect",
                                   "unparseable"])
def test_nothing_expires(setup):
    h = swept_harness()
    protocols = (("range", b"\x00" if setup == "unparseable" else subscription("a")),)
    member, gen = in_state(h, "Stable", protocols=protocols,
                           protocol_type="connect" if setup == "connect" else "consumer")
    commit(h, generation=gen, member=member, b=[(0, 2, "")])
    if setup in ("PreparingRebalance", "CompletingRebalance"):
        in_state_after_stable(h, member, setup)
    h.advance(10 * MINUTE)
    assert offsets_of(h) == {("b", 0): 2}


def test_empty_group_without_offsets_is_removed_at_the_next_sweep():
    h = swept_harness()
    member, _ = in_state(h, "Stable")
    h.leave(member)
    assert h.group_state().state == S.EMPTY
    h.advance(INTERVAL)
    assert "g" not in h.shard.groups
    assert decode(h.persisted[-1]) == GroupMetadataTombstone("g")


def test_partial_expiry_keeps_an_empty_group():
    h = swept_harness()
    commit(h, t=[(0, 1, "")])
    h.advance(30_000)
    commit(h, t=[(1, 2, "")])
    h.advance(30_000)
    assert offsets_of(h) == {("t", 1): 2} and h.shard.groups["g"].state == S.EMPTY
    assert not any(isinstance(decode(r), GroupMetadataTombstone) for r in h.persisted)


def test_live_commit_records_replay_to_the_same_offsets():
    h = Harness(config())
    commit(h, 2, retention=1_000, t=[(0, 1, "a")])
    commit(h, 9, t=[(1, 2, "b", 4)])
    assert [decode(r) for r in h.persisted] == [
        OffsetCommit("g", "t", 0, 1, -1, "a", 0, 1_000, None, 1),
        OffsetCommit("g", "t", 1, 2, 4, "b", 0, None, None, 3)]
