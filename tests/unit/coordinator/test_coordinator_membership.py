"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: each check of Kafka's GroupMetadataManager in
Kafka's order, in every group state, with the exact error code and response shape.

Kafka sources: GroupCoordinatorService.{joinGroup,syncGroup,heartbeat,leaveGroup} (group id and
session bounds), KafkaApis.handleSyncGroupRequest (v5 protocol fields first), and
GroupMetadataManager.classicGroup{Join,Sync,Heartbeat,Leave}* for the rest.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.classic.state import GroupState as S
from protocol.errors import ErrorCode as E

from tests.support.coordinator_harness import RANGE, Harness

STATES = ["unknown", "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


def build(state: str, max_size: int | None = None):
    """A group in ``state`` with two dynamic members: (harness, [leader, follower], generation).

    ``max_size`` lowers group.max.size once the group is built (as a config change would)."""
    h = Harness()
    if state == "unknown":
        return h, ["client-x", "client-y"], 0
    ids, generation = h.stable_group(2)
    if state == "Empty":
        h.leave(*ids)
        generation += 1
    elif state == "PreparingRebalance":
        h.join(ids[0])                                      # the leader's join always rebalances
    elif state == "CompletingRebalance":
        h.join(ids[0])
        h.join(ids[1])
        generation += 1
    elif state == "Dead":
        h.group_state().transition(S.DEAD, h.now)
    assert (h.group_state().state.value if state != "unknown" else "unknown") == state
    if max_size is not None:
        h.shard.config = replace(h.config, group_max_size=max_size)
    return h, ids, generation


def error_of(h, token):
    return h.replies[token].error_code


# --- JoinGroup ------------------------------------------------------------------------------

@pytest.mark.parametrize("state", STATES)
def test_join_empty_group_id_is_checked_first(state):
    h, ids, _ = build(state)
    t = h.join("anything", group="", session=1)             # bad session too: the id wins
    response = h.replies[t]
    assert (response.error_code, response.member_id, response.generation_id) == \
        (E.INVALID_GROUP_ID, "anything", -1)
    assert (response.leader, response.members, response.protocol_name) == ("", (), None)   # null from v7


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("session,ok", [(5_999, False), (6_000, True), (1_800_000, True),
                                        (1_800_001, False)])
def test_join_session_timeout_bounds(state, session, ok):
    h, ids, _ = build(state)
    t = h.join("someone", session=session)
    error = error_of(h, t)
    if ok:
        assert error != E.INVALID_SESSION_TIMEOUT
    else:
        assert (error, h.replies[t].member_id) == (E.INVALID_SESSION_TIMEOUT, "someone")


def test_join_session_bounds_follow_config():
    h = Harness(CoordinatorConfig(group_min_session_timeout_ms=100, group_max_session_timeout_ms=200))
    assert error_of(h, h.join(session=99)) == E.INVALID_SESSION_TIMEOUT
    assert error_of(h, h.join(session=100)) == E.MEMBER_ID_REQUIRED
    assert error_of(h, h.join(session=201)) == E.INVALID_SESSION_TIMEOUT


def test_join_known_member_id_on_unknown_group():
    h = Harness()
    t = h.join("ghost", version=3)
    assert (error_of(h, t), h.replies[t].member_id) == (E.UNKNOWN_MEMBER_ID, "ghost")
    assert "g" not in h.shard.groups and h.persisted == []


@pytest.mark.parametrize("state", ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"])
def test_join_unknown_member_id_on_existing_group(state):
    h, ids, _ = build(state)
    t = h.join("client-ghost")
    response = h.replies[t]
    assert (response.error_code, response.member_id) == (E.UNKNOWN_MEMBER_ID, "client-ghost")
    # Member-validation errors carry a null protocol name at v7+ (Kafka sets it explicitly).
    assert response.protocol_name is None and response.protocol_type is None


def test_join_dead_group():
    h, ids, _ = build("Dead")
    assert (error_of(h, h.join()), h.replies[h.join()].member_id) == (E.COORDINATOR_NOT_AVAILABLE, "")
    t = h.join(ids[1])
    assert (error_of(h, t), h.replies[t].member_id) == (E.COORDINATOR_NOT_AVAILABLE, ids[1])


@pytest.mark.parametrize("state,max_size", [("PreparingRebalance", 1), ("CompletingRebalance", 2),
                                            ("Stable", 2)])
def test_join_group_max_size(state, max_size):
    """Preparing counts members awaiting join (1 here: the leader); the others count members."""
    h, ids, _ = build(state, max_size)
    t = h.join(version=3)                                   # a brand-new member
    response = h.replies[t]
    assert (response.error_code, response.member_id, response.generation_id) == \
        (E.GROUP_MAX_SIZE_REACHED, "", -1)


def test_join_max_size_in_preparing_counts_awaiting_members_and_evicts():
    h, ids, generation = build("Stable", max_size=1)
    leader, follower = ids                                  # max lowered below the size
    t_leader = h.join(leader)                               # PreparingRebalance, 1 awaiting
    t = h.join(follower)
    assert (error_of(h, t), h.replies[t].member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    assert follower not in h.group_state().members          # Kafka removes the refused member
    h.advance(60_000)                                       # the join timer completes the phase
    assert h.replies[t_leader].generation_id == generation + 1
    assert [m.member_id for m in h.replies[t_leader].members] == [leader]


def test_join_max_size_never_applies_to_empty_group():
    h, ids, _ = build("Empty", max_size=0)
    t = h.join(version=3)
    assert not h.answered(t)                                # parked: accepted


def test_join_pending_members_are_not_counted_for_max_size():
    h = Harness(CoordinatorConfig(group_max_size=1))
    first = h.new_member()
    second = h.new_member()                                 # Empty: always accepted
    t1 = h.join(first)
    t2 = h.join(second)                                     # 1 awaiting >= max: refused
    assert not h.answered(t1) and error_of(h, t2) == E.GROUP_MAX_SIZE_REACHED
    assert second not in h.group_state().pending_members


@pytest.mark.parametrize("protocol_type,protocols", [("", RANGE), ("consumer", ())])
def test_join_empty_group_needs_type_and_protocols(protocol_type, protocols):
    h = Harness()
    t = h.join(version=3, protocol_type=protocol_type, protocols=protocols)
    assert (error_of(h, t), h.replies[t].member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
@pytest.mark.parametrize("protocol_type,protocols", [("connect", RANGE),
                                                     ("consumer", (("roundrobin", b""),))])
def test_join_incompatible_protocols(state, protocol_type, protocols):
    h, ids, _ = build(state)
    t = h.join(protocol_type=protocol_type, protocols=protocols)
    assert (error_of(h, t), h.replies[t].member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    t = h.join(ids[1], protocol_type=protocol_type, protocols=protocols)
    assert (error_of(h, t), h.replies[t].member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, ids[1])


def test_join_one_common_protocol_is_enough():
    h, ids, _ = build("Stable")
    t = h.join(protocols=(("roundrobin", b""), ("range", b"")))
    assert error_of(h, t) == E.MEMBER_ID_REQUIRED


@pytest.mark.parametrize("version,expected", [(3, None), (4, E.MEMBER_ID_REQUIRED), (9, E.MEMBER_ID_REQUIRED)])
def test_member_id_required_from_v4_only(version, expected):
    h = Harness()
    t = h.join(version=version, client_id="app")
    if expected is None:
        assert not h.answered(t)                            # added at once and parked
        assert len(h.group_state().members) == 1
    else:
        response = h.replies[t]
        assert response.error_code == expected
        assert response.member_id == "app-00000000-0000-0000-0000-000000000001"
        assert response.generation_id == -1 and response.protocol_name == ("" if version < 7 else None)
        assert h.group_state().pending_members == {response.member_id}
        assert not h.group_state().members


def test_static_member_skips_member_id_required():
    h = Harness()
    t = h.join(instance="inst-1", version=9)
    assert not h.answered(t)
    (member_id,) = h.group_state().members
    assert member_id == "inst-1-00000000-0000-0000-0000-000000000001"


def test_new_group_writes_an_empty_group_record_first():
    h = Harness()
    t = h.join(version=3)                                   # adds a member: PreparingRebalance
    assert len(h.persisted) == 1 and not h.answered(t)
    from offsets_log.records import decode_record
    record = h.persisted[0]
    value = decode_record(record.key, record.value).value
    assert (value.protocol_type, value.generation, value.protocol, value.leader, value.members) == \
        ("", 0, None, None, ())


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_join_static_fencing(state):
    h, ids, _ = build(state)
    h2 = h
    h2.join(instance="inst-1", version=5)               # a static member joins the group
    static_id = h2.group_state().static_members["inst-1"]
    t_wrong = h2.join(ids[1], instance="inst-1", version=5)
    assert (error_of(h2, t_wrong), h2.replies[t_wrong].member_id) == (E.FENCED_INSTANCE_ID, ids[1])
    t_unknown = h2.join(static_id, instance="inst-2", version=5)
    assert error_of(h2, t_unknown) == E.UNKNOWN_MEMBER_ID


def test_join_in_empty_state_by_former_member():
    h, ids, _ = build("Empty")
    t = h.join(ids[0])
    assert (error_of(h, t), h.replies[t].member_id) == (E.UNKNOWN_MEMBER_ID, ids[0])


def test_join_in_completing_rebalance_same_protocols_repeats_the_answer():
    h, ids, generation = build("CompletingRebalance")
    leader, follower = ids
    t = h.join(follower)
    response = h.replies[t]
    assert (response.error_code, response.generation_id, response.leader, response.members) == \
        (E.NONE, generation, leader, ())
    t = h.join(leader)
    assert [m.member_id for m in h.replies[t].members] == [leader, follower]
    assert h.group_state().state == S.COMPLETING_REBALANCE


def test_join_in_completing_rebalance_changed_protocols_rebalances():
    h, ids, generation = build("CompletingRebalance")
    t = h.join(ids[1], protocols=(("range", b"changed"),))
    assert not h.answered(t) and h.group_state().state == S.PREPARING_REBALANCE


def test_join_in_stable_follower_same_metadata_gets_current_generation():
    h, ids, generation = build("Stable")
    t = h.join(ids[1])
    response = h.replies[t]
    assert (response.error_code, response.generation_id, response.leader, response.members,
            response.protocol_name, response.protocol_type) == \
        (E.NONE, generation, ids[0], (), "range", "consumer")
    assert h.group_state().state == S.STABLE


@pytest.mark.parametrize("who,protocols", [(0, RANGE), (1, (("range", b"new"),))])
def test_join_in_stable_leader_or_changed_metadata_rebalances(who, protocols):
    h, ids, _ = build("Stable")
    t = h.join(ids[who], protocols=protocols)
    assert not h.answered(t) and h.group_state().state == S.PREPARING_REBALANCE


@pytest.mark.parametrize("version,name,ptype", [(6, "range", None), (7, "range", "consumer")])
def test_join_response_fields_by_version(version, name, ptype):
    h, ids, generation = build("Stable")
    response = h.replies[h.join(ids[1], version=version)]
    assert (response.protocol_name, response.protocol_type) == (name, ptype)


@pytest.mark.parametrize("version,expected", [(6, ""), (7, None)])
def test_join_error_protocol_name_is_empty_before_v7_then_null(version, expected):
    h, ids, _ = build("Stable")
    response = h.replies[h.join(ids[1], version=version, protocol_type="other")]
    assert response.error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert response.protocol_name == expected and response.protocol_type is None


def test_join_validation_error_protocol_name_by_version():
    h, ids, _ = build("Stable")
    assert h.replies[h.join("client-ghost", version=6)].protocol_name == ""
    assert h.replies[h.join("client-ghost", version=7)].protocol_name is None


def test_leader_members_carry_instance_ids_from_v5():
    h = Harness()
    t = h.join(instance="i-1", version=5)
    h.advance(3_000)
    (member,) = h.replies[t].members
    assert member.group_instance_id == "i-1" and member.metadata == b"range-meta"


# --- SyncGroup ------------------------------------------------------------------------------

@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("ptype,pname", [(None, "range"), ("consumer", None)])
def test_sync_v5_requires_protocol_fields_before_anything(state, ptype, pname):
    h, ids, generation = build(state)
    t = h.sync(ids[0], generation, group="", protocol_type=ptype, protocol_name=pname)
    assert error_of(h, t) == E.INCONSISTENT_GROUP_PROTOCOL
    t = h.sync(ids[0], generation, version=4, group="", protocol_type=ptype, protocol_name=pname)
    assert error_of(h, t) == E.INVALID_GROUP_ID


@pytest.mark.parametrize("state", STATES)
def test_sync_empty_group_id(state):
    h, ids, generation = build(state)
    response = h.replies[h.sync(ids[0], generation, group="")]
    assert (response.error_code, response.assignment, response.protocol_name) == \
        (E.INVALID_GROUP_ID, b"", None)


@pytest.mark.parametrize("state,expected", [
    ("unknown", E.UNKNOWN_MEMBER_ID), ("Empty", E.UNKNOWN_MEMBER_ID),
    ("Dead", E.COORDINATOR_NOT_AVAILABLE),
    ("PreparingRebalance", E.REBALANCE_IN_PROGRESS), ("Stable", E.NONE)])
def test_sync_by_state(state, expected):
    h, ids, generation = build(state)
    t = h.sync(ids[1], generation if state != "PreparingRebalance" else generation)
    assert error_of(h, t) == expected


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_sync_member_checks_in_order(state):
    h, ids, generation = build(state)
    assert error_of(h, h.sync("client-ghost", generation)) == E.UNKNOWN_MEMBER_ID
    assert error_of(h, h.sync(ids[1], generation, instance="nobody")) == E.UNKNOWN_MEMBER_ID
    # wrong generation *and* wrong protocol: the generation is checked first
    assert error_of(h, h.sync(ids[1], generation + 5, protocol_name="x")) == E.ILLEGAL_GENERATION
    assert error_of(h, h.sync(ids[1], generation, protocol_name="roundrobin")) == \
        (E.INCONSISTENT_GROUP_PROTOCOL)
    assert error_of(h, h.sync(ids[1], generation, protocol_type="connect")) == \
        E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_static_fencing():
    h = Harness()
    t = h.join(instance="i-1", version=5)
    h.advance(3_000)
    member_id, generation = h.replies[t].member_id, h.replies[t].generation_id
    assert error_of(h, h.sync("other", generation, instance="i-1")) == E.FENCED_INSTANCE_ID
    assert error_of(h, h.sync(member_id, generation, instance="i-2")) == E.UNKNOWN_MEMBER_ID


def test_sync_protocol_unknown_to_group_is_not_inconsistent():
    """A pending member that rejoined (parked) and syncs during the initial rebalance."""
    h = Harness()
    member = h.new_member()
    h.join(member)
    t = h.sync(member, 0, protocol_name="anything", protocol_type="consumer")
    assert error_of(h, t) == E.REBALANCE_IN_PROGRESS


def test_sync_completing_parks_followers_until_leader():
    h, ids, generation = build("CompletingRebalance")
    leader, follower = ids
    t_follower = h.sync(follower, generation)
    assert not h.answered(t_follower)
    before = len(h.persisted)
    t_leader = h.sync(leader, generation, assignments={follower: b"F"})   # leader missing
    assert len(h.persisted) == before + 1
    assert h.replies[t_follower].assignment == b"F"
    assert h.replies[t_leader].assignment == b""            # members missing get empty
    assert (h.replies[t_leader].protocol_type, h.replies[t_leader].protocol_name) == ("consumer", "range")
    assert h.group_state().state == S.STABLE


def test_sync_persist_precedes_the_answers():
    from coordinator.actions import Persist, Reply
    h, ids, generation = build("CompletingRebalance")
    h.actions.clear()
    h.sync(ids[1], generation)
    h.sync(ids[0], generation, assignments={ids[0]: b"L", ids[1]: b"F"})
    kinds = [type(a) for a in h.actions]
    assert kinds == [Persist, Reply, Reply]


def test_sync_stable_returns_stored_assignment_ignoring_request():
    h, ids, generation = build("Stable")
    t = h.sync(ids[1], generation, assignments={ids[1]: b"ignored"})
    assert h.replies[t].assignment == ids[1].encode()


@pytest.mark.parametrize("version,fields", [(4, (None, None)), (5, ("consumer", "range"))])
def test_sync_response_protocol_fields_by_version(version, fields):
    h, ids, generation = build("Stable")
    kwargs = {} if version >= 5 else {"protocol_type": None, "protocol_name": None}
    response = h.replies[h.sync(ids[1], generation, version=version, **kwargs)]
    assert (response.protocol_type, response.protocol_name) == fields


# --- Heartbeat ------------------------------------------------------------------------------

@pytest.mark.parametrize("state,expected", [
    ("unknown", E.UNKNOWN_MEMBER_ID), ("Empty", E.UNKNOWN_MEMBER_ID),
    ("Dead", E.COORDINATOR_NOT_AVAILABLE), ("PreparingRebalance", E.REBALANCE_IN_PROGRESS),
    ("CompletingRebalance", E.NONE), ("Stable", E.NONE)])
def test_heartbeat_by_state(state, expected):
    h, ids, generation = build(state)
    assert error_of(h, h.heartbeat(ids[1], generation)) == expected
    assert error_of(h, h.heartbeat(ids[1], generation, group="")) == E.INVALID_GROUP_ID


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_heartbeat_checks_member_then_generation_then_state(state):
    h, ids, generation = build(state)
    assert error_of(h, h.heartbeat("client-ghost", generation + 9)) == E.UNKNOWN_MEMBER_ID
    assert error_of(h, h.heartbeat(ids[1], generation + 9)) == E.ILLEGAL_GENERATION
    assert error_of(h, h.heartbeat(ids[1], generation, instance="nobody")) == E.UNKNOWN_MEMBER_ID


def test_heartbeat_static_fencing_before_generation():
    h = Harness()
    h.join(instance="i-1", version=5)
    h.advance(3_000)
    assert error_of(h, h.heartbeat("old-id", 99, instance="i-1")) == E.FENCED_INSTANCE_ID


def test_heartbeat_in_preparing_still_extends_the_session():
    h, ids, generation = build("Stable")
    leader, follower = ids
    h.join(leader)                                          # rebalance: join timer 60 s
    h.advance(9_000)
    assert error_of(h, h.heartbeat(follower, generation)) == E.REBALANCE_IN_PROGRESS
    h.advance(9_000)                                        # 18 s after its last sync: alive
    assert follower in h.group_state().members
    h.advance(2_000)                                        # 10 s after that heartbeat: gone
    assert follower not in h.group_state().members


# --- LeaveGroup -----------------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 3, 5])
def test_leave_empty_group_id(version):
    h, ids, _ = build("Stable")
    response = h.replies[h.leave(ids[0], group="", version=version)]
    assert response.error_code == E.INVALID_GROUP_ID and not response.members


def test_leave_unknown_group_v0_top_level_v3_per_member():
    h = Harness()
    assert error_of(h, h.leave("m1", version=2)) == E.UNKNOWN_MEMBER_ID
    response = h.replies[h.leave("m1", ("", "i-1"), version=3)]
    assert response.error_code == E.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == \
        [("m1", None, E.UNKNOWN_MEMBER_ID), ("", "i-1", E.UNKNOWN_MEMBER_ID)]


def test_leave_dead_group_top_level():
    h, ids, _ = build("Dead")
    response = h.replies[h.leave(ids[0], version=3)]
    assert response.error_code == E.COORDINATOR_NOT_AVAILABLE and not response.members


@pytest.mark.parametrize("state", ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"])
def test_leave_unknown_member_per_state(state):
    h, ids, _ = build(state)
    assert error_of(h, h.leave("client-ghost", version=1)) == E.UNKNOWN_MEMBER_ID
    response = h.replies[h.leave("client-ghost", version=4)]
    assert (response.error_code, response.members[0].error_code) == (E.NONE, E.UNKNOWN_MEMBER_ID)


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_leave_removes_and_rebalances(state):
    h, ids, generation = build(state)
    t = h.leave(ids[1], version=2)
    assert error_of(h, t) == E.NONE
    assert ids[1] not in h.group_state().members
    if state == "PreparingRebalance":                       # the leader already rejoined
        assert h.group_state().state == S.COMPLETING_REBALANCE
    else:
        assert h.group_state().state == S.PREPARING_REBALANCE


def test_leave_v3_batch_mixes_results():
    h = Harness()
    t = h.join(instance="i-1", version=5)
    h.advance(3_000)
    static_id = h.replies[t].member_id
    pending = h.new_member()
    response = h.replies[h.leave(("", "i-9"), (pending, None), ("wrong", "i-1"), ("", "i-1"),
                                 version=5)]
    assert [m.error_code for m in response.members] == \
        [E.UNKNOWN_MEMBER_ID, E.NONE, E.FENCED_INSTANCE_ID, E.NONE]
    assert not h.group_state().members and not h.group_state().pending_members
    assert static_id not in h.group_state().static_members.values()


def test_leave_of_parked_member_answers_its_join():
    h, ids, generation = build("Stable")
    leader = ids[0]
    parked = h.join(leader)
    h.leave(leader, version=3)
    response = h.replies[parked]
    assert (response.error_code, response.member_id, response.generation_id) == \
        (E.UNKNOWN_MEMBER_ID, "", -1)
