"""Whole rebalances driven through a real Shard on a fake clock (Kafka's classic-group states and timers).

Times are exact: each timer fires at its own deadline, so "not yet at t-1, done at t" is checked
where Kafka's GroupMetadataManager fixes the instant (prepareRebalance,
tryCompleteInitialRebalanceElseSchedule, completeClassicGroupJoin, expireClassicGroupMemberHeartbeat,
expirePendingSync).
"""

from __future__ import annotations

import pytest

from coordinator.config import NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig
from coordinator.java_order import hash_map_order
from coordinator.classic.state import GroupState as S
from offsets_log.records import decode_record
from protocol.errors import ErrorCode as E

from tests.support.coordinator_harness import Harness


def err(h, token):
    return h.replies[token].error_code


def group_records(h):
    """The GroupMetadata values persisted so far, in order."""
    out = []
    for record in h.persisted:
        typed = decode_record(record.key, record.value)
        if hasattr(typed, "value") and hasattr(typed.value, "generation"):
            out.append(typed.value)
    return out


def commit_errors(h, token):
    return [p.error_code for t in h.replies[token].topics for p in t.partitions]


# --- a 3-member rebalance with the range protocol ------------------------------------------------

def test_three_member_range_rebalance():
    h = Harness()
    protocols = [(("range", b"A"), ("roundrobin", b"a")), (("roundrobin", b"b"), ("range", b"B")),
                 (("range", b"C"),)]
    ids = [h.new_member(protocols=p) for p in protocols]
    tokens = [h.join(m, protocols=p) for m, p in zip(ids, protocols)]
    # Two members were added during the initial delay: one 3 s extension, done at 6 s.
    h.advance(5_999)
    assert not any(h.answered(t) for t in tokens)
    h.advance(1)
    answers = [h.replies[t] for t in tokens]
    assert {(a.error_code, a.generation_id, a.protocol_name, a.leader) for a in answers} == \
        {(E.NONE, 1, "range", ids[0])}
    assert [a.member_id for a in answers] == ids
    assert [(m.member_id, m.metadata) for m in answers[0].members] == \
        [(ids[0], b"A"), (ids[1], b"B"), (ids[2], b"C")]           # range metadata of each
    assert answers[1].members == () and answers[2].members == ()
    assert h.group_state().state == S.COMPLETING_REBALANCE

    follower_syncs = [h.sync(m, 1) for m in ids[1:]]
    assert not any(h.answered(t) for t in follower_syncs)
    leader_sync = h.sync(ids[0], 1, assignments={m: f"part-{i}".encode() for i, m in enumerate(ids)})
    assert [h.replies[t].assignment for t in [leader_sync, *follower_syncs]] == \
        [b"part-0", b"part-1", b"part-2"]
    assert h.group_state().state == S.STABLE
    (record,) = [v for v in group_records(h) if v.generation == 1]
    assert (record.protocol, record.leader) == ("range", ids[0])
    assert [(m.member_id, m.subscription, m.assignment) for m in record.members] == \
        [(ids[0], b"A", b"part-0"), (ids[1], b"B", b"part-1"), (ids[2], b"C", b"part-2")]


def test_protocol_election_by_votes():
    h = Harness()
    prefs = [(("roundrobin", b""), ("range", b"")), (("roundrobin", b""), ("range", b"")),
             (("range", b""), ("roundrobin", b""))]
    ids = [h.new_member(protocols=p) for p in prefs]
    tokens = [h.join(m, protocols=p) for m, p in zip(ids, prefs)]
    h.advance(6_000)
    assert {h.replies[t].protocol_name for t in tokens} == {"roundrobin"}   # 2 votes to 1


@pytest.mark.parametrize("leader_prefers", ["range", "roundrobin"])
def test_protocol_tie_follows_java_hashmap_order_not_the_leader(leader_prefers):
    h = Harness()
    both = {"range": (("range", b""), ("roundrobin", b"")),
            "roundrobin": (("roundrobin", b""), ("range", b""))}
    other = "roundrobin" if leader_prefers == "range" else "range"
    first, second = h.new_member(protocols=both[leader_prefers]), h.new_member(protocols=both[other])
    t = h.join(first, protocols=both[leader_prefers])
    h.join(second, protocols=both[other])
    h.advance(6_000)
    # Kafka keeps the first maximum its HashMap<String, Integer> of votes iterates: "range"
    # hashes to bucket 0 and "roundrobin" to a later one in a 16-bucket table.
    assert hash_map_order(["roundrobin", "range"]) == ["range", "roundrobin"]
    assert h.replies[t].protocol_name == "range"


# --- stale generation ----------------------------------------------------------------------------

def test_stale_member_gets_illegal_generation_after_rebalance():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    assert commit_errors(h, h.commit(follower, generation)) == [E.NONE]
    t_leader = h.join(leader)                                 # rebalance
    # PreparingRebalance still accepts commits from the current (old) generation.
    assert commit_errors(h, h.commit(follower, generation)) == [E.NONE]
    t_follower = h.join(follower)                             # everyone rejoined: generation 2
    new_generation = h.replies[t_follower].generation_id
    assert new_generation == generation + 1 and h.replies[t_leader].generation_id == new_generation
    assert err(h, h.heartbeat(follower, generation)) == E.ILLEGAL_GENERATION
    assert commit_errors(h, h.commit(follower, generation)) == [E.ILLEGAL_GENERATION]
    assert commit_errors(h, h.commit(follower, new_generation)) == [E.REBALANCE_IN_PROGRESS]
    assert err(h, h.sync(follower, generation)) == E.ILLEGAL_GENERATION
    h.sync(leader, new_generation, assignments={leader: b"L", follower: b"F"})
    assert commit_errors(h, h.commit(follower, new_generation, {("t", 0): 5, ("t", 1): 6})) == \
        [E.NONE, E.NONE]
    assert err(h, h.heartbeat(follower, new_generation)) == E.NONE


def test_heartbeat_during_join_gets_rebalance_in_progress():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    h.join(h.new_member())                                    # a newcomer triggers a rebalance
    assert h.group_state().state == S.PREPARING_REBALANCE
    assert err(h, h.heartbeat(leader, generation)) == E.REBALANCE_IN_PROGRESS
    assert err(h, h.heartbeat(follower, generation)) == E.REBALANCE_IN_PROGRESS
    assert err(h, h.sync(follower, generation)) == E.REBALANCE_IN_PROGRESS


# --- static membership ---------------------------------------------------------------------------

def static_group(h, version, session=10_000):
    """Two static members, Stable: returns ({instance: member id}, generation, leader instance)."""
    tokens = {i: h.join(instance=i, version=version, session=session) for i in ("i-1", "i-2")}
    h.advance(6_000)
    ids = {i: h.replies[t].member_id for i, t in tokens.items()}
    generation = h.replies[tokens["i-1"]].generation_id
    leader = h.replies[tokens["i-1"]].leader
    for i, m in ids.items():
        h.sync(m, generation, instance=i, version=5 if version >= 5 else 3,
               assignments={x: i_.encode() for i_, x in ids.items()} if m == leader else None)
    assert h.group_state().state == S.STABLE
    return ids, generation, next(i for i, m in ids.items() if m == leader)


@pytest.mark.parametrize("version", [5, 6, 7, 8, 9])
def test_static_follower_restart_causes_no_rebalance(version):
    h = Harness()
    ids, generation, leader_instance = static_group(h, version)
    follower_instance = "i-2" if leader_instance == "i-1" else "i-1"
    old_id = ids[follower_instance]
    records_before = len(group_records(h))
    t = h.join(instance=follower_instance, version=version)
    response = h.replies[t]
    assert (response.error_code, response.generation_id, response.leader, response.members,
            response.skip_assignment) == (E.NONE, generation, ids[leader_instance], (), False)
    new_id = response.member_id
    assert new_id != old_id and new_id.startswith(follower_instance + "-")
    assert h.group_state().state == S.STABLE
    (record,) = group_records(h)[records_before:]                # the new id is persisted
    assert new_id in [m.member_id for m in record.members] and record.generation == generation
    assert err(h, h.heartbeat(old_id, generation, instance=follower_instance)) == E.FENCED_INSTANCE_ID
    assert commit_errors(h, h.commit(old_id, generation, instance=follower_instance, version=7)) == \
        [E.FENCED_INSTANCE_ID]
    sync = h.replies[h.sync(new_id, generation, instance=follower_instance)]
    assert (sync.error_code, sync.assignment) == (E.NONE, follower_instance.encode())


@pytest.mark.parametrize("version", [5, 8])
def test_static_leader_restart_before_v9_looks_like_a_follower(version):
    h = Harness()
    ids, generation, leader_instance = static_group(h, version)
    old_leader = ids[leader_instance]
    response = h.replies[h.join(instance=leader_instance, version=version)]
    assert (response.error_code, response.leader, response.members, response.skip_assignment) == \
        (E.NONE, old_leader, (), False)                          # the *previous* leader id
    assert h.group_state().leader_id == response.member_id
    assert h.group_state().state == S.STABLE


def test_static_leader_restart_v9_skips_assignment():
    h = Harness()
    ids, generation, leader_instance = static_group(h, 9)
    response = h.replies[h.join(instance=leader_instance, version=9)]
    assert (response.error_code, response.leader, response.skip_assignment, response.generation_id) == \
        (E.NONE, response.member_id, True, generation)
    assert sorted(m.group_instance_id for m in response.members) == ["i-1", "i-2"]
    sync = h.replies[h.sync(response.member_id, generation, instance=leader_instance)]
    assert sync.assignment == leader_instance.encode()          # from the stored assignment
    assert h.group_state().state == S.STABLE


def test_static_restart_with_other_protocol_rebalances():
    h = Harness()
    ids, generation, leader_instance = static_group(h, 9)
    follower = "i-2" if leader_instance == "i-1" else "i-1"
    # "range" stays the only common protocol: the selection cannot change, no rebalance.
    h.join(instance=follower, version=9, protocols=(("roundrobin", b""), ("range", b"")))
    assert h.group_state().state == S.STABLE
    # Now both offer roundrobin first: the vote would switch to it, so the restart rebalances.
    t = h.join(instance=leader_instance, version=9, protocols=(("roundrobin", b""), ("range", b"")))
    assert not h.answered(t) and h.group_state().state == S.PREPARING_REBALANCE


def test_static_replacement_fences_parked_join():
    h = Harness()
    ids, generation, leader_instance = static_group(h, 9)
    old_leader = ids[leader_instance]
    parked = h.join(old_leader, instance=leader_instance, version=9)   # leader rejoin: rebalance
    assert not h.answered(parked)
    h.join(instance=leader_instance, version=9)                        # restarted incarnation
    response = h.replies[parked]
    assert (response.error_code, response.member_id, response.protocol_name) == \
        (E.FENCED_INSTANCE_ID, old_leader, None)


def test_static_replacement_keeps_the_old_id_pending_sync_like_kafka():
    """replaceStaticMember does not move pending-sync entries: the sync timer still rebalances."""
    h = Harness()
    tokens = {i: h.join(instance=i, version=9, session=120_000) for i in ("i-1", "i-2")}
    h.advance(6_000)
    ids = {i: h.replies[t].member_id for i, t in tokens.items()}
    leader = h.replies[tokens["i-1"]].leader
    h.sync(leader, 1, assignments={m: b"x" for m in ids.values()})
    assert h.group_state().state == S.STABLE                          # i-2 has not synced
    follower = next(i for i, m in ids.items() if m != leader)
    new_id = h.replies[h.join(instance=follower, version=9, session=120_000)].member_id
    assert err(h, h.sync(new_id, 1, instance=follower)) == E.NONE
    h.advance(59_999)                                                 # pending-sync deadline
    assert h.group_state().state == S.STABLE
    h.advance(1)
    assert h.group_state().state == S.PREPARING_REBALANCE
    assert new_id in h.group_state().members


def test_static_members_survive_the_join_timer():
    h = Harness()
    ids, generation, leader_instance = static_group(h, 9, session=120_000)
    follower = "i-2" if leader_instance == "i-1" else "i-1"
    t = h.join(ids[follower], instance=follower, version=9, session=120_000,
               protocols=(("range", b"new"),))                        # rebalance; leader silent
    h.advance(59_999)
    assert not h.answered(t)
    h.advance(1)                                                      # join timer fires
    response = h.replies[t]
    assert response.generation_id == generation + 1 and response.leader == ids[follower]
    assert ids[leader_instance] in h.group_state().members           # kept, not removed


# --- leader leaving ------------------------------------------------------------------------------

def test_leader_leaves_and_next_member_leads():
    h = Harness()
    (leader, second, third), generation = h.stable_group(3)
    h.leave(leader, version=3)
    assert h.group_state().leader_id == second and h.group_state().state == S.PREPARING_REBALANCE
    t2 = h.join(second)
    assert not h.answered(t2)
    t3 = h.join(third)                              # all rejoined: completes at once (not initial)
    assert h.replies[t2].leader == second and h.replies[t2].generation_id == generation + 1
    assert [m.member_id for m in h.replies[t2].members] == [second, third]
    assert h.replies[t3].members == ()


def test_leader_that_does_not_rejoin_is_replaced_at_the_join_timeout():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=120_000)
    t = h.join(follower, protocols=(("range", b"new"),), session=120_000)   # rebalance
    h.advance(59_999)
    assert not h.answered(t)
    h.advance(1)                                                # max rebalance timeout 60 s
    response = h.replies[t]
    assert (response.leader, response.generation_id) == (follower, generation + 1)
    assert leader not in h.group_state().members


# --- initial delay (section 2.4) -----------------------------------------------------------------

def test_initial_delay_without_late_joiners_is_exactly_3s():
    h = Harness()
    member = h.new_member()
    t = h.join(member)
    h.advance(2_999)
    assert not h.answered(t)                        # never completes early, even though all joined
    h.advance(1)
    assert h.replies[t].generation_id == 1


def test_initial_delay_extended_in_3s_steps_bounded_by_rebalance_timeout():
    h = Harness()
    rebalance = 10_000
    first = h.join(version=3, rebalance=rebalance)              # t=0: delay 3000, budget 7000
    late = []
    for at in (2_000, 5_000, 8_000, 9_500):                     # a newcomer in every window
        h.advance(at - h.now)
        late.append(h.join(version=3, rebalance=rebalance))
    # fires at 3000 (+3000), 6000 (+3000), 9000 (+min(3000, 1000)), 10000: budget spent
    h.advance(10_000 - 1 - h.now)
    assert not h.answered(first)
    h.advance(1)
    assert h.replies[first].generation_id == 1
    assert len(h.replies[first].members) == 5


def test_initial_delay_stops_at_first_quiet_window():
    h = Harness()
    first = h.join(version=3)
    h.advance(1_000)
    h.join(version=3)                               # extends once
    h.advance(5_999 - h.now)
    assert not h.answered(first)
    h.advance(1)
    assert h.replies[first].generation_id == 1


def test_zero_initial_delay_completes_at_once():
    h = Harness(CoordinatorConfig(group_initial_rebalance_delay_ms=0))
    t = h.join(h.new_member())
    h.advance(0)
    assert h.replies[t].generation_id == 1


def test_short_initial_delay_lone_member_waits_one_window():
    h = Harness(CoordinatorConfig(group_initial_rebalance_delay_ms=50))   # the test fixture's
    t = h.join(h.new_member())
    h.advance(49)
    assert not h.answered(t)
    h.advance(1)
    assert h.replies[t].generation_id == 1


def test_short_initial_delay_members_started_together_form_one_generation():
    """KIP-394 members joining 5 ms apart (0..95 ms): the windows ending at 50 and 100 each saw
    a newcomer, the one ending at 150 did not, so all 20 get generation 1 at exactly 150 ms."""
    h = Harness(CoordinatorConfig(group_initial_rebalance_delay_ms=50))
    ids = [h.new_member() for _ in range(20)]
    tokens = []
    for m in ids:
        tokens.append(h.join(m))
        h.advance(5)
    h.advance(149 - h.now)
    assert not any(h.answered(t) for t in tokens)
    h.advance(1)
    answers = [h.replies[t] for t in tokens]
    assert {a.generation_id for a in answers} == {1}
    assert len(answers[ids.index(answers[0].leader)].members) == 20


def test_short_initial_delay_budget_is_the_rebalance_timeout():
    """With a rebalance timeout of 120 ms the budget after the first window is 70 ms: windows of
    50 and then min(50, 20) = 20 ms, so a steady trickle of joiners ends the join at 120 ms."""
    h = Harness(CoordinatorConfig(group_initial_rebalance_delay_ms=50))
    first = h.join(h.new_member(rebalance=120), rebalance=120)
    for at in range(10, 200, 10):
        if h.answered(first):
            break
        h.advance(at - h.now)
        h.join(h.new_member(rebalance=120), rebalance=120)
    assert h.now == 120 and h.replies[first].generation_id == 1


def test_delay_applies_again_after_group_emptied_but_not_to_later_rebalances():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    t = h.join(leader)
    h.join(follower)
    assert h.replies[t].generation_id == generation + 1          # non-initial: immediate
    h.leave(leader, follower)
    assert h.group_state().state == S.EMPTY
    t = h.join(h.new_member())
    h.advance(2_999)
    assert not h.answered(t)
    h.advance(1)
    assert h.replies[t].generation_id == generation + 3


# --- timers --------------------------------------------------------------------------------------

def test_session_expiry_removes_member_and_rebalances():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)       # both synced just now
    for _ in range(3):                                          # only the leader heartbeats
        h.advance(3_000)
        assert err(h, h.heartbeat(leader, generation)) == E.NONE
    h.advance(999)
    assert follower in h.group_state().members
    h.advance(1)                                                # 10 s after its sync
    assert follower not in h.group_state().members
    assert h.group_state().state == S.PREPARING_REBALANCE
    assert err(h, h.heartbeat(leader, generation)) == E.REBALANCE_IN_PROGRESS
    t = h.join(leader)                                          # the only member: done at once
    assert (h.replies[t].generation_id, h.replies[t].members[0].member_id) == (generation + 1, leader)


def test_session_expires_exactly_at_timeout():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    h.advance(9_999)
    assert leader in h.group_state().members
    h.advance(1)
    assert leader not in h.group_state().members
    assert h.group_state().state == S.EMPTY                  # the join completed with nobody


def test_parked_join_keeps_existing_member_alive():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    t = h.join(leader, rebalance=120_000)                    # waits for the follower
    for _ in range(6):                                       # 30 s: three leader sessions
        h.advance(5_000)
        assert err(h, h.heartbeat(follower, generation)) == E.REBALANCE_IN_PROGRESS
    assert leader in h.group_state().members and not h.answered(t)


def test_new_member_join_timeout_is_five_minutes():
    h = Harness()
    (leader,), generation = h.stable_group(1, rebalance=600_000)
    t = h.join(version=3, rebalance=600_000)                  # v3: added at once, parked
    for _ in range(NEW_MEMBER_JOIN_TIMEOUT_MS // 5_000 - 1):
        h.advance(5_000)
        h.heartbeat(leader, generation)                       # the leader never rejoins
    h.advance(4_999)
    assert not h.answered(t)
    h.advance(1)
    response = h.replies[t]
    assert (response.error_code, response.member_id) == (E.UNKNOWN_MEMBER_ID, "")
    assert len(h.group_state().members) == 1


def test_pending_member_expiry_unblocks_the_join():
    h = Harness()
    (leader,), generation = h.stable_group(1)
    pending = h.new_member(session=7_000)                     # never comes back
    t = h.join(leader)
    h.advance(6_999)
    assert not h.answered(t)
    h.advance(1)                                              # pending id dropped: all joined
    assert h.replies[t].generation_id == generation + 1
    assert pending not in h.group_state().pending_members


def test_pending_sync_timeout_removes_silent_members():
    h = Harness()
    (leader, follower), generation = h.stable_group(2, session=120_000)
    h.join(leader, session=120_000)
    h.join(follower, session=120_000)                         # generation 2, CompletingRebalance
    h.sync(leader, generation + 1, assignments={leader: b"L", follower: b"F"})
    assert h.group_state().state == S.STABLE
    h.advance(59_999)                                         # follower alive, never synced
    assert follower in h.group_state().members
    h.advance(1)                                              # rebalance timeout since the join
    assert follower not in h.group_state().members
    assert h.group_state().state == S.PREPARING_REBALANCE


def test_everyone_leaving_bumps_generation_to_empty_with_a_record():
    h = Harness()
    (leader, follower), generation = h.stable_group(2)
    before = len(group_records(h))
    t = h.leave(leader, follower, version=3)
    assert [m.error_code for m in h.replies[t].members] == [E.NONE, E.NONE]
    group = h.group_state()
    assert (group.state, group.generation, group.protocol_name, group.leader_id) == \
        (S.EMPTY, generation + 1, None, None)
    (record,) = group_records(h)[before:]
    assert (record.generation, record.members, record.protocol, record.protocol_type) == \
        (generation + 1, (), None, "consumer")
    assert err(h, h.heartbeat(leader, generation + 1)) == E.UNKNOWN_MEMBER_ID
    # A simple commit (generation -1) is accepted once the group is Empty.
    assert commit_errors(h, h.commit("", -1)) == [E.NONE]


def test_everyone_leaving_during_initial_delay_waits_for_the_timer():
    h = Harness()
    member = h.new_member()
    h.join(member)
    h.leave(member, version=3)
    assert h.group_state().state == S.PREPARING_REBALANCE    # no early completion
    h.advance(3_000)
    assert (h.group_state().state, h.group_state().generation) == (S.EMPTY, 1)


def test_newcomer_in_a_later_rebalance_does_not_extend_the_next_initial_delay():
    """Only joins during an initial rebalance set Kafka's newMemberAdded flag."""
    h = Harness()
    (leader,), generation = h.stable_group(1)
    newcomer = h.new_member()
    h.join(leader)                                            # non-initial rebalance
    t = h.join(newcomer)                                      # added while Preparing
    assert h.replies[t].generation_id == generation + 1
    h.leave(leader, newcomer)
    assert h.group_state().state == S.EMPTY
    t = h.join(h.new_member())
    h.advance(3_000)
    assert h.answered(t)                                      # no extension at 3 s
