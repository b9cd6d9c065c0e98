"""Recovery: a shard rebuilt from its offsets log equals the live shard, as Kafka's coordinator loads its state from __consumer_offsets.

Records go through the real log (ShardLog on a temporary directory, real encoding) and come
back through coordinator.recovery.load_shard. Kafka's load semantics: groups with members come
back Stable with fresh session timers, groups without members Empty; a group caught
mid-rebalance comes back as its last GroupMetadata record.
"""

from __future__ import annotations

import logging
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator.recovery import load_shard
from coordinator.shard import Shard
from coordinator.classic.state import GroupState as S
from offsets_log.log import ShardLog
from offsets_log.records import GroupMetadata, GroupMetadataTombstone, Record, decode, group_metadata_key, tombstone

from tests.support.coordinator_harness import Harness
from tests.unit.coordinator.test_coordinator_admin import delete, describe
from tests.unit.coordinator.test_coordinator_offsets import (BIG_SESSION, commit, config, fetch, in_state, offset_delete,
                                                             subscription)

GROUPS = ("g1", "g2")


def reload(records, cfg, now: int, directory: str) -> tuple[Shard, list]:
    shard_log = ShardLog(directory)
    shard_log.append(records, now)
    shard_log.close()
    shard = Shard(0, cfg)
    actions = load_shard(shard, ShardLog(directory), now).actions
    return shard, actions


def view(group) -> tuple:
    """What DescribeGroups shows of a group at rest, plus what the record carries for it."""
    members = {m.member_id: (m.group_instance_id, m.client_id, m.client_host, m.session_timeout_ms,
                             m.rebalance_timeout_ms, m.metadata(group.protocol_name), m.assignment)
               for m in group.members.values()}
    ts = group.current_state_ts if group.state == S.EMPTY else None
    return (group.state, group.generation, group.protocol_type, group.protocol_name,
            group.leader_id if members else None, members, ts)


def persisted_view(value) -> tuple:
    members = {m.member_id: (m.group_instance_id, m.client_id, m.client_host, m.session_timeout,
                             m.rebalance_timeout, bytes(m.subscription), bytes(m.assignment))
               for m in value.members}
    return (S.STABLE if members else S.EMPTY, value.generation, value.protocol_type, value.protocol,
            value.leader if members else None, members)


def check_equivalent(h: Harness, directory: str) -> Shard:
    live = h.shard
    rebuilt, _ = reload(h.persisted, live.config, h.now, directory)
    assert rebuilt.offsets == live.offsets
    assert set(rebuilt.groups) == set(live.groups)
    last_record = {}
    for rec in h.persisted:
        typed = decode(rec)
        if isinstance(typed, GroupMetadata):
            last_record[typed.group] = typed.value
        elif isinstance(typed, GroupMetadataTombstone):
            last_record.pop(typed.group, None)
    for gid, group in live.groups.items():
        again = rebuilt.groups[gid]
        if group.state in (S.STABLE, S.EMPTY):
            assert view(again) == view(group), gid
        elif gid in last_record:          # mid-rebalance: the last persisted state
            assert view(again)[:6] == persisted_view(last_record[gid]), gid
        else:
            assert view(again)[:6] == (S.EMPTY, 0, "", None, None, {}), gid
        for member_id in again.members:
            assert ("session", gid, member_id) in rebuilt.timers
    return rebuilt


# --- examples ----------------------------------------------------------------------------------

def test_stable_group_comes_back_stable_with_fresh_session_timers(tmp_path):
    h = Harness(config(), group="g")
    ids, generation = h.stable_group(2, session=10_000, rebalance=20_000)
    commit(h, generation=generation, member=ids[0], t=[(0, 5, "x", 2)])
    rebuilt, actions = reload(h.persisted, h.config, 500_000, str(tmp_path))   # a restart much later
    assert actions == []
    group = rebuilt.groups["g"]
    assert (group.state, group.generation, list(group.members)) == (S.STABLE, generation, ids)
    assert group.leader_id == ids[0] and group.subscribed_topics is None     # b"range-meta"
    assert rebuilt.next_deadline() == 510_000                                # sessions from load
    rebuilt.tick(509_999)
    assert len(group.members) == 2
    rebuilt.tick(510_000)
    assert (group.state, group.generation, group.members) == (S.EMPTY, generation + 1, {})


def test_group_mid_rebalance_comes_back_as_last_persisted(tmp_path):
    h = Harness(config(), group="g")
    member, generation = in_state(h, "CompletingRebalance")
    assert h.group_state().generation == generation
    rebuilt, _ = reload(h.persisted, h.config, h.now, str(tmp_path))
    group = rebuilt.groups["g"]
    assert (group.state, group.generation, list(group.members)) == (S.STABLE, generation - 1, [member])


def test_group_being_created_is_written_as_kafkas_empty_record(tmp_path):
    """A JoinGroup that creates a group and writes nothing else writes newEmptyGroupMetadataRecord:
    protocol type "", generation 0, no members (GroupMetadataManager.classicGroupJoin)."""
    h = Harness(config(), group="g")
    h.join(version=3)                                   # member added at once: PreparingRebalance
    record = decode(h.persisted[0])
    assert (record.value.protocol_type, record.value.generation, record.value.protocol,
            record.value.leader, record.value.members) == ("", 0, None, None, ())
    rebuilt, _ = reload(h.persisted, h.config, h.now, str(tmp_path))
    assert (rebuilt.groups["g"].state, rebuilt.groups["g"].protocol_type) == (S.EMPTY, "")


def test_group_tombstone_removes_the_group_only(tmp_path):
    """GroupMetadataManager.replay(tombstone) removes the group; offsets go by their own tombstones."""
    h = Harness(config(), group="g")
    commit(h)
    records = [*h.persisted, tombstone(group_metadata_key("g"))]
    rebuilt, _ = reload(records, h.config, 0, str(tmp_path))
    assert "g" not in rebuilt.groups and ("t", 0) in rebuilt.offsets["g"]
    h.shard = rebuilt
    assert fetch(h, 8, {"g": {"t": [0]}}).groups[0].topics[0].partitions[0].committed_offset == -1


def test_undecodable_records_are_skipped_with_a_warning(tmp_path, caplog):
    h = Harness(config(), group="g")
    commit(h)
    records = [Record(b"\x00\x05junk", b"\x00\x00"), Record(b"\x00", None), *h.persisted,
               Record(b"\x00\x01\x00", b"\x00\x03")]
    with caplog.at_level(logging.WARNING, logger="groupbroker.coordinator"):
        rebuilt, _ = reload(records, h.config, 0, str(tmp_path))
    assert rebuilt.offsets == h.shard.offsets
    assert sum("skipping record" in m for m in caplog.messages) == 3


def test_loaded_group_over_max_size_rebalances(tmp_path):
    h = Harness(config(), group="g")
    h.stable_group(2, **BIG_SESSION)
    rebuilt, _ = reload(h.persisted, config(group_max_size=1), h.now, str(tmp_path))
    assert rebuilt.groups["g"].state == S.PREPARING_REBALANCE


def test_loaded_shard_sweeps_expired_offsets(tmp_path):
    cfg = config(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1_000)
    h = Harness(cfg, group="g")
    commit(h)
    rebuilt, _ = reload(h.persisted, cfg, 59_500, str(tmp_path))
    assert rebuilt.next_deadline() == 60_500                 # first sweep one interval after load
    rebuilt.tick(60_500)
    assert rebuilt.offsets == {} and rebuilt.groups == {}


# --- replay equivalence (hypothesis) -----------------------------------------------------------

class ReplayEquivalence(RuleBasedStateMachine):
    """Random group traffic on a live shard; the log it wrote must rebuild the same shard."""

    def __init__(self):
        super().__init__()
        self.h = Harness(config(offsets_retention_minutes=1, offsets_retention_check_interval_ms=30_000),
                         group="g1")
        self.h._collect(self.h.shard.loaded(0))
        self.known: dict[str, list[str]] = {g: [] for g in GROUPS}       # member ids handed out
        self.tmp = tempfile.TemporaryDirectory()
        self.checks = 0

    def teardown(self):
        try:
            if self.h.persisted:
                self.check()
        finally:
            self.tmp.cleanup()

    def member(self, group: str, pick: int) -> str:
        """A member id of this group, current or past (or one it never had)."""
        g = self.h.shard.groups.get(group)
        ids = sorted(set(self.known[group]) | set(g.members if g else ())) or ["nobody"]
        return ids[pick % len(ids)]

    def generation(self, group: str) -> int:
        g = self.h.shard.groups.get(group)
        return g.generation if g else -1

    @rule(group=st.sampled_from(GROUPS), version=st.sampled_from([3, 9]),
          topics=st.lists(st.sampled_from("abc"), min_size=1, max_size=2, unique=True),
          client=st.sampled_from(["c1", "c2"]))
    def join_new(self, group, version, topics, client):
        protocols = (("range", subscription(*topics)), ("roundrobin", b"rr"))
        args = dict(group=group, version=version, protocols=protocols, client_id=client,
                    session=10_000, rebalance=15_000)
        token = self.h.join(**args)
        answer = self.h.replies.get(token)
        if answer is not None and answer.error_code == 79:
            self.known[group].append(answer.member_id)
            self.h.join(answer.member_id, **args)

    @rule(group=st.sampled_from(GROUPS), instance=st.sampled_from(["s1", "s2"]))
    def join_static(self, group, instance):
        self.h.join(group=group, instance=instance, version=9, session=10_000, rebalance=15_000)

    @rule(group=st.sampled_from(GROUPS), pick=st.integers(0, 5))
    def rejoin(self, group, pick):
        self.h.join(self.member(group, pick), group=group, session=10_000, rebalance=15_000)

    @rule(group=st.sampled_from(GROUPS), pick=st.integers(0, 5))
    def sync(self, group, pick):
        g = self.h.shard.groups.get(group)
        member = self.member(group, pick)
        leader = g is not None and g.leader_id == member
        assignments = {m: f"{m}:{self.h.now}".encode() for m in g.members} if leader else None
        self.h.sync(member, self.generation(group), group=group, protocol_name=g.protocol_name
                    if g is not None else "range", assignments=assignments)

    @rule(group=st.sampled_from(GROUPS))
    def finish_rebalance(self, group):
        """Let the join phase end, then every member syncs, the leader first: reaches Stable."""
        g = self.h.shard.groups.get(group)
        if g is not None and g.state == S.PREPARING_REBALANCE:
            self.h.advance(3_000)
        if g is None or g.state != S.COMPLETING_REBALANCE:
            return
        for member in sorted(g.members, key=lambda m: m != g.leader_id):
            self.sync(group, self.member_index(group, member))

    def member_index(self, group: str, member_id: str) -> int:
        g = self.h.shard.groups.get(group)
        return sorted(set(self.known[group]) | set(g.members if g else ())).index(member_id)

    @rule(group=st.sampled_from(GROUPS), pick=st.integers(0, 5))
    def heartbeat(self, group, pick):
        self.h.heartbeat(self.member(group, pick), self.generation(group), group=group)

    @rule(group=st.sampled_from(GROUPS), pick=st.integers(0, 5))
    def leave(self, group, pick):
        self.h.leave(self.member(group, pick), group=group)

    @rule(group=st.sampled_from(GROUPS), pick=st.integers(0, 5), simple=st.booleans(),
          parts=st.dictionaries(st.tuples(st.sampled_from("abc"), st.integers(0, 2)),
                                st.tuples(st.integers(0, 10**6), st.text(max_size=3)), min_size=1,
                                max_size=3),
          version=st.sampled_from([2, 6, 9]), retention=st.sampled_from([-1, 20_000]))
    def commit(self, group, pick, simple, parts, version, retention):
        topics = {}
        for (topic, partition), (offset, meta) in sorted(parts.items()):
            topics.setdefault(topic, []).append((partition, offset, meta, 1 if version >= 6 else -1))
        commit(self.h, version, group=group, generation=-1 if simple else self.generation(group),
               member="" if simple else self.member(group, pick),
               retention=retention if version <= 4 else -1, **topics)

    @rule(group=st.sampled_from(GROUPS))
    def delete_group(self, group):
        delete(self.h, group)

    @rule(group=st.sampled_from(GROUPS), topic=st.sampled_from("abc"))
    def delete_offsets(self, group, topic):
        offset_delete(self.h, group=group, **{topic: [0, 1, 2]})

    @rule(ms=st.sampled_from([0, 500, 3_000, 10_000, 20_000, 70_000]))
    def advance(self, ms):
        self.h.advance(ms)

    @precondition(lambda self: self.h.persisted)
    @rule()
    def check(self):
        self.checks += 1
        check_equivalent(self.h, f"{self.tmp.name}/{self.checks}")

    @invariant()
    def describe_never_fails(self):
        for g in describe(self.h, 5, *GROUPS):
            assert g.error_code == 0


ReplayEquivalence.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestReplayEquivalence = ReplayEquivalence.TestCase


def test_final_state_equivalence_after_a_fixed_scenario(tmp_path):
    """A deterministic run of every operation kind, checked once at the end."""
    h = Harness(config(), group="g1")
    member, generation = in_state(h, "Stable")
    commit(h, generation=generation, member=member, a=[(0, 1, "x")])
    h.group = "g2"
    in_state(h, "Empty")
    commit(h, group="g2", b=[(1, 2, "")])
    h.group = "g3"
    in_state(h, "PreparingRebalance")
    offset_delete(h, group="g1", a=[0])
    check_equivalent(h, str(tmp_path))
