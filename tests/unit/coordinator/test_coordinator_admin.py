"""DescribeGroups, ListGroups and DeleteGroups per state and version (checked
against Kafka's GroupMetadataManager.describeGroups/listGroups, GroupCoordinatorShard.deleteGroups
and KafkaApis.handleDescribeGroupsRequest)."""

from __future__ import annotations

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.classic.state import GroupState as S
from offsets_log.records import GroupMetadataTombstone, OffsetCommitTombstone, decode
from protocol import REQUESTS

from tests.support.coordinator_harness import Harness
from tests.unit.coordinator.test_coordinator_offsets import BIG_SESSION, commit, config, in_state, subscription

DESCRIBE, LIST, DELETE = 15, 16, 42
OMITTED = -2147483648
#: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclEntry.supportedOperations(GROUP))
ALL_GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)


def describe(h: Harness, version: int, *groups: str, ops: bool = False):
    request = REQUESTS[DESCRIBE].cls(groups=groups, include_authorized_operations=ops)
    return h.replies[h.send(DESCRIBE, version, request)].groups


def list_groups(h: Harness, version=5, states=(), types=()):
    response = h.replies[h.send(LIST, version, REQUESTS[LIST].cls(states_filter=states, types_filter=types))]
    assert response.error_code == 0
    return {g.group_id: (g.group_state, g.protocol_type, g.group_type) for g in response.groups}


def delete(h: Harness, *groups: str):
    response = h.replies[h.send(DELETE, 2, REQUESTS[DELETE].cls(groups_names=groups))]
    return {r.group_id: r.error_code for r in response.results}


# --- DescribeGroups ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", range(0, 7))
def test_describe_unknown_group(version):
    h = Harness(config())
    g, = describe(h, version, "ghost", ops=True)
    if version >= 6:
        assert (g.error_code, g.error_message) == (69, "Group ghost not found.")
        assert g.authorized_operations == OMITTED              # only set on entries without error
    else:
        assert (g.error_code, g.error_message) == (0, None)
        assert g.authorized_operations == (ALL_GROUP_OPERATIONS if version >= 3 else OMITTED)
    assert (g.group_id, g.group_state, g.protocol_type, g.protocol_data, g.members) == \
        ("ghost", "Dead", "", "", ())


@pytest.mark.parametrize("version,ops,expected", [
    (2, True, OMITTED), (3, False, OMITTED), (3, True, ALL_GROUP_OPERATIONS),
    (6, True, ALL_GROUP_OPERATIONS)])
def test_describe_authorized_operations(version, ops, expected):
    h = Harness(config())
    in_state(h, "Stable")
    assert describe(h, version, "g", ops=ops)[0].authorized_operations == expected


@pytest.mark.parametrize("state", ["Stable", "PreparingRebalance", "CompletingRebalance", "Empty"])
@pytest.mark.parametrize("version", [0, 3, 4, 6])
def test_describe_known_group(state, version):
    h = Harness(config())
    meta = subscription("a")
    member, generation = in_state(h, state, protocols=(("range", meta),))
    g, = describe(h, version, "g")
    assert (g.error_code, g.group_state, g.protocol_type) == (0, state, "consumer")
    stable = state == "Stable"
    assert g.protocol_data == ("range" if stable else "")
    members = {m.member_id: m for m in g.members}
    assert set(members) == set(h.group_state().members)
    if state == "Empty":
        assert members == {}
    for m in members.values():
        assert (m.client_id, m.client_host) == ("client", "/127.0.0.1")
        assert m.group_instance_id is None
        assert m.member_metadata == (meta if stable else b"")
        # the assignment shows in every state, as Kafka's describe of a member without metadata
        assert m.member_assignment == h.group_state().members[m.member_id].assignment
        assert not stable or m.member_assignment == b"assigned"


def test_describe_static_member_instance_id_from_v4():
    h = Harness(config())
    token = h.join(instance="inst", **BIG_SESSION)
    h.advance(3_000)
    member = h.replies[token].member_id
    assert describe(h, 3, "g")[0].members[0].group_instance_id is None
    assert describe(h, 4, "g")[0].members[0].group_instance_id == "inst"
    assert describe(h, 4, "g")[0].members[0].member_id == member


def test_describe_simple_group_and_many_groups_in_order():
    h = Harness(config())
    commit(h, group="simple")
    got = describe(h, 6, "simple", "ghost", "")
    assert [(g.group_id, g.error_code, g.group_state, g.protocol_type) for g in got] == [
        ("simple", 0, "Empty", ""), ("ghost", 69, "Dead", ""), ("", 69, "Dead", "")]


def test_describe_not_coordinator_has_no_state():
    h = Harness(CoordinatorConfig(), group="g")
    other = next(g for g in (f"x{i}" for i in range(100)) if not h.shard.owns(g))
    g, = describe(h, 5, other, ops=True)
    assert (g.error_code, g.group_state, g.authorized_operations) == (16, "", OMITTED)


# --- ListGroups --------------------------------------------------------------------------------

def three_groups() -> Harness:
    h = Harness(config())
    in_state(h, "Stable")
    commit(h, group="simple")
    h.group = "other"
    in_state(h, "CompletingRebalance")
    h.group = "g"
    return h


def test_list_all_groups():
    h = three_groups()
    assert list_groups(h) == {"g": ("Stable", "consumer", "classic"),
                              "simple": ("Empty", "", "classic"),
                              "other": ("CompletingRebalance", "consumer", "classic")}


@pytest.mark.parametrize("states,expected", [
    (("STABLE",), {"g"}), ((" empty ",), {"simple"}), (("completingrebalance", "Stable"), {"g", "other"}),
    (("Dead",), set()), (("bogus",), set())])
def test_list_state_filter_is_case_insensitive(states, expected):
    assert set(list_groups(three_groups(), 4, states=states)) == expected


@pytest.mark.parametrize("types,expected", [
    (("Classic",), {"g", "simple", "other"}), (("consumer",), set()), (("share",), set()),
    (("nonsense",), set()), (("consumer", "CLASSIC"), {"g", "simple", "other"})])
def test_list_type_filter(types, expected):
    assert set(list_groups(three_groups(), 5, types=types)) == expected


# --- DeleteGroups ------------------------------------------------------------------------------

@pytest.mark.parametrize("state,expected", [
    ("missing", 69), ("Dead", 69), ("Stable", 68), ("PreparingRebalance", 68),
    ("CompletingRebalance", 68), ("Empty", 0), ("simple", 0)])
def test_delete_group_by_state(state, expected):
    h = Harness(config())
    in_state(h, state)
    before = len(h.persisted)
    assert delete(h, "g") == {"g": expected}
    if expected:
        assert len(h.persisted) == before
    else:
        assert "g" not in h.shard.groups and list_groups(h) == {}


def test_delete_writes_a_tombstone_per_offset_then_the_group():
    h = Harness(config())
    member, generation = in_state(h, "Stable")
    commit(h, generation=generation, member=member, t=[(0, 1, ""), (1, 2, "")], u=[(0, 3, "")])
    h.leave(member)
    commit(h, group="keep")
    before = len(h.persisted)
    assert delete(h, "g", "ghost", "keep") == {"g": 0, "ghost": 69, "keep": 0}
    written = [decode(r) for r in h.persisted[before:]]
    assert written[:3] == [OffsetCommitTombstone("g", "t", 0), OffsetCommitTombstone("g", "t", 1),
                           OffsetCommitTombstone("g", "u", 0)]
    assert written[3:] == [GroupMetadataTombstone("g"), OffsetCommitTombstone("keep", "t", 0),
                           GroupMetadataTombstone("keep")]
    assert h.shard.offsets == {} and h.shard.groups == {}
    assert describe(h, 5, "g")[0].group_state == "Dead"


def test_delete_empty_group_id_and_not_coordinator():
    h = Harness(config())
    assert delete(h, "") == {"": 69}
    commit(h, group="")
    assert delete(h, "") == {"": 0}
    h = Harness(CoordinatorConfig(), group="g")
    other = next(g for g in (f"x{i}" for i in range(100)) if not h.shard.owns(g))
    assert delete(h, other) == {other: 16}


def test_deleted_group_can_be_recreated():
    h = Harness(config())
    commit(h)
    delete(h, "g")
    member, _ = in_state(h, "Stable")
    assert h.group_state().state == S.STABLE and member in h.group_state().members
