"""Requests whose records could not be written: refused before anything changes.

Kafka builds its records with serializers that throw on a STRING over 32,767 bytes, and its
coordinator runtime refuses a batch over the offsets topic's max.message.bytes
(RecordTooLargeException); either way the write operation fails and the client gets what
CoordinatorOperationExceptionHelper.handleOperationException (or, for classic join and sync,
GroupMetadataManager.appendGroupMetadataErrorToResponseError) makes of it:
UNKNOWN_SERVER_ERROR. A failed SyncGroup write answers every waiting member and starts a new
rebalance; a failed static-member replacement is reverted.
"""

from __future__ import annotations

import pytest

from coordinator.actions import Journal, Persist
from coordinator.config import CoordinatorConfig
from coordinator.routing import shard_for
from coordinator.classic.state import GroupState as S
from offsets_log.records import batch_size
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode as E

from tests.support.coordinator_harness import Harness
from tests.support.coordinator_harness import OffsetCommitRequest as Req

LIMIT = 0x7FFF


def long_group(length: int, shard: int) -> str:
    """A group id of ``length`` characters that the harness's shard owns."""
    for i in range(1000):
        group = f"{i:04d}".ljust(length, "g")
        if shard_for(group) == shard:
            return group
    raise AssertionError("no such group id")


def unchanged(h: Harness, group: str) -> bool:
    return group not in h.shard.groups and not h.persisted and not h.shard.timers


@pytest.mark.parametrize("version", [3, 9])
def test_a_group_id_too_long_to_store_gets_unknown_server_error_on_join(version):
    h = Harness()
    group = long_group(40_000, h.shard.shard_id)
    t = h.join(group=group, version=version)
    assert (h.replies[t].error_code, h.replies[t].member_id) == (E.UNKNOWN_SERVER_ERROR, "")
    assert unchanged(h, group)


@pytest.mark.parametrize(("length", "error"), [(LIMIT - 37, E.MEMBER_ID_REQUIRED),
                                               (LIMIT - 36, E.UNKNOWN_SERVER_ERROR)])
def test_a_client_id_whose_member_id_would_be_too_long(length, error):
    """The member id is the client id, "-" and a UUID: 37 more bytes."""
    h = Harness()
    t = h.join(client_id="c" * length)
    assert h.replies[t].error_code == error
    if error == E.UNKNOWN_SERVER_ERROR:
        assert h.replies[t].member_id == "" and unchanged(h, h.group)
    else:
        assert len(h.replies[t].member_id.encode()) == LIMIT


def test_a_multibyte_client_id_is_measured_in_utf8_bytes():
    h = Harness()
    t = h.join(client_id="é" * ((LIMIT - 36) // 2 + 1))      # fewer characters than the limit
    assert h.replies[t].error_code == E.UNKNOWN_SERVER_ERROR


def test_a_static_instance_id_whose_member_id_would_be_too_long():
    h = Harness()
    t = h.join(instance="i" * (LIMIT - 36))
    assert (h.replies[t].error_code, h.replies[t].member_id) == (E.UNKNOWN_SERVER_ERROR, "")
    assert unchanged(h, h.group)


def test_an_existing_member_with_a_long_client_id_is_not_refused():
    """Only a new member id is made from the client id; a known member rejoins as before."""
    h = Harness()
    (member,), generation = h.stable_group(1)
    t = h.join(member, client_id="c" * 32_000)
    assert h.replies[t].error_code == E.NONE


@pytest.mark.parametrize(("generation", "version", "error"), [
    (-1, 8, E.UNKNOWN_SERVER_ERROR),        # a simple commit would write: it cannot
    (1, 8, E.ILLEGAL_GENERATION),           # Kafka validates first; nothing is written
    (1, 9, E.GROUP_ID_NOT_FOUND),
])
def test_an_offset_commit_for_a_group_id_too_long_to_store(generation, version, error):
    h = Harness()
    group = long_group(40_000, h.shard.shard_id)
    t = h.commit("", generation, {("t", 0): 5, ("t", 1): 6}, group=group, version=version)
    errors = [p.error_code for topic in h.replies[t].topics for p in topic.partitions]
    assert errors == [error, error]
    assert unchanged(h, group)


def test_metadata_too_long_to_store_is_refused_whole_before_anything_changes():
    """offset.metadata.max.bytes above what a STRING holds: the record cannot be built."""
    h = Harness(CoordinatorConfig(offset_metadata_max_bytes=100_000))
    t = h.commit("", -1, {("t", 0): 1})
    assert h.replies[t].topics[0].partitions[0].error_code == E.NONE
    persisted = list(h.persisted)
    topic = Req.OffsetCommitRequestTopic
    request = Req(group_id=h.group, generation_id_or_member_epoch=-1, member_id="", topics=(
        topic(name="t", partitions=(topic.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=99, committed_metadata="m" * 40_000),)),))
    t = h.send(ApiKey.OFFSET_COMMIT, 8, request)
    assert h.replies[t].topics[0].partitions[0].error_code == E.UNKNOWN_SERVER_ERROR
    assert h.persisted == persisted and h.shard.offsets[h.group][("t", 0)].offset == 1


def assignment_record_size(h: Harness, ids: list[str], assignment: bytes) -> int:
    return batch_size(h.shard.classic.group_record(h.group_state(), {m: assignment for m in ids}))


def rebalance_to_sync(h: Harness, ids: list[str]) -> int:
    """Both members rejoin; the join phase completes. Returns the new generation."""
    tokens = [h.join(m) for m in ids]
    assert all(h.answered(t) for t in tokens)
    return h.replies[tokens[0]].generation_id


@pytest.mark.parametrize("over", [0, 1])
def test_an_assignment_over_message_max_bytes_fails_every_sync_and_rebalances(over):
    """The record of exactly message.max.bytes is written; one byte more fails the SyncGroup
    write: every waiting member gets UNKNOWN_SERVER_ERROR and the group rebalances again."""
    probe = Harness()
    ids, _ = probe.stable_group(2)
    limit = assignment_record_size(probe, ids, b"x" * 5000) - over
    h = Harness(CoordinatorConfig(message_max_bytes=limit))
    ids, generation = h.stable_group(2)
    generation = rebalance_to_sync(h, ids)
    written = len(h.persisted)
    follower = h.sync(ids[1], generation)                 # parked until the leader syncs
    leader = h.sync(ids[0], generation, assignments={m: b"x" * 5000 for m in ids})
    group = h.group_state()
    if not over:
        assert [h.replies[t].error_code for t in (follower, leader)] == [E.NONE, E.NONE]
        assert group.state == S.STABLE and len(h.persisted) == written + 1
        return
    assert [h.replies[t].error_code for t in (follower, leader)] == [E.UNKNOWN_SERVER_ERROR] * 2
    assert group.state == S.PREPARING_REBALANCE and len(h.persisted) == written
    assert all(m.assignment == b"" for m in group.members.values())
    generation = rebalance_to_sync(h, ids)              # a smaller assignment is stored
    syncs = [h.sync(ids[1], generation), h.sync(ids[0], generation, assignments={m: b"a" for m in ids})]
    assert [h.replies[t].error_code for t in syncs] == [E.NONE, E.NONE]
    assert group.state == S.STABLE


def test_a_static_replacement_that_cannot_be_stored_is_reverted():
    """Kafka's updateStaticMemberThenRebalanceOrCompleteJoin on a failed write: the old
    member id stays valid and the new incarnation gets the error without a member id."""
    probe = Harness()
    t = probe.join(instance="static", protocols=(("range", b"small"),))
    probe.advance(3_000)
    probe_id = probe.replies[t].member_id
    probe.sync(probe_id, 1, assignments={probe_id: b"a"})
    limit = batch_size(probe.shard.classic.group_record(probe.group_state())) + 100
    h = Harness(CoordinatorConfig(message_max_bytes=limit))
    t = h.join(instance="static", protocols=(("range", b"small"),))
    h.advance(3_000)
    old_id = h.replies[t].member_id
    assert h.replies[h.sync(old_id, 1, assignments={old_id: b"a"})].error_code == E.NONE
    written, actions = len(h.persisted), len(h.actions)
    t = h.join(instance="static", protocols=(("range", b"b" * 1000),))
    answer = h.replies[t]
    assert (answer.error_code, answer.member_id, answer.generation_id, answer.leader) == \
        (E.UNKNOWN_SERVER_ERROR, "", 1, old_id)
    group = h.group_state()
    assert list(group.members) == [old_id] and group.static_members == {"static": old_id}
    assert group.members[old_id].protocols == [("range", b"small")] and len(h.persisted) == written
    assert not any(isinstance(a, (Journal, Persist)) for a in h.actions[actions:])
    assert h.replies[h.heartbeat(old_id, 1, instance="static")].error_code == E.NONE
    h.advance(9_000)                                      # its session was re-armed, not lost
    assert h.replies[h.heartbeat(old_id, 1, instance="static")].error_code == E.NONE


def test_unloading_answers_parked_requests_not_coordinator():
    h = Harness()
    ids, generation = h.stable_group(2)
    join = h.join(ids[0])                                  # parked: the follower has not rejoined
    h._collect(h.shard.unload())
    assert (h.replies[join].error_code, h.replies[join].member_id) == (E.NOT_COORDINATOR, ids[0])
    assert h.group_state().state == S.DEAD and h.shard.next_deadline() is None
