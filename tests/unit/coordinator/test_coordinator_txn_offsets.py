"""TxnOffsetCommit in the group coordinator: Kafka's KIP-447 checks in its order, offsets
pending until their transaction's marker, OffsetFetch with require_stable, and replay."""

from __future__ import annotations

import pytest

from offsets_log.records import decode
from protocol import REQUESTS
from protocol.api_keys import ApiKey

from tests.support.coordinator_harness import Harness
from tests.unit.coordinator.test_coordinator_offsets import (ILLEGAL_GEN, NONE, UNKNOWN_MEMBER, FENCED, codes,
                                                             commit, config, fetch_request, in_state,
                                                             offsets_of, static_stable)

TxnCommit = REQUESTS[ApiKey.TXN_OFFSET_COMMIT].cls
FETCH = ApiKey.OFFSET_FETCH
PID = 4000


def txn_commit(h: Harness, group="g", generation=-1, member="", instance=None, pid=PID, version=3,
               offsets=((0, 42),)):
    tcls = TxnCommit.TxnOffsetCommitRequestTopic
    request = TxnCommit(transactional_id="tx", group_id=group, producer_id=pid, producer_epoch=0,
                        generation_id=generation, member_id=member, group_instance_id=instance,
                        topics=(tcls(name="t", partitions=tuple(
                            tcls.TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                                                 committed_metadata="m")
                            for p, o in offsets)),))
    return h.replies[h.send(ApiKey.TXN_OFFSET_COMMIT, version, request)]


def end(h: Harness, commit_it: bool, pid=PID) -> None:
    h._collect(h.shard.complete_transaction(h.now, pid, 0, commit_it, 0))


def fetched(h: Harness, stable: bool) -> dict:
    request = fetch_request(8, {"g": {"t": [0]}})
    request = type(request)(groups=request.groups, require_stable=stable)
    answer = h.replies[h.send(FETCH, 8, request)]
    return {p.partition_index: (p.committed_offset, p.error_code)
            for t in answer.groups[0].topics for p in t.partitions}


# (state, generation, member: "member" | "" | "other", instance, expected): unlike a plain
# commit, no group-state rule (an admin commit to a Stable group, a CompletingRebalance group)
CASES = [
    ("missing", -1, "", None, NONE),                       # a simple group is created
    ("missing", 3, "other", None, ILLEGAL_GEN),
    ("Dead", 1, "member", None, 15),
    ("Empty", -1, "", None, NONE),
    ("Stable", 1, "member", None, NONE),
    ("Stable", 2, "member", None, ILLEGAL_GEN),             # the zombie of KIP-447
    ("Stable", 1, "other", None, UNKNOWN_MEMBER),
    ("Stable", -1, "", None, NONE),                         # old clients name no member at all
    ("Stable", -1, "member", None, ILLEGAL_GEN),
    ("CompletingRebalance", 2, "member", None, NONE),       # no REBALANCE_IN_PROGRESS
    ("CompletingRebalance", 1, "member", None, ILLEGAL_GEN),
]


@pytest.mark.parametrize("state,generation,who,instance,expected", CASES)
def test_txn_offset_commit_checks(state, generation, who, instance, expected):
    h = Harness(config())
    member, _ = in_state(h, state)
    member_id = {"member": member, "": "", "other": "someone-else"}[who]
    answer = txn_commit(h, generation=generation, member=member_id, instance=instance)
    assert set(codes(answer).values()) == {expected}
    assert offsets_of(h) == {}                               # pending, never committed yet


def test_fenced_static_member():
    h = Harness(config())
    static_stable(h)
    assert set(codes(txn_commit(h, generation=1, member="stale", instance="i")).values()) == {FENCED}


def test_empty_group_id_and_metadata_too_large():
    h = Harness(config(offset_metadata_max_bytes=0))
    assert set(codes(txn_commit(h, group="")).values()) == {24}
    assert set(codes(txn_commit(h)).values()) == {12}


def test_pending_until_commit_marker_and_unstable_for_require_stable():
    h = Harness(config())
    commit(h, t=[(0, 10, "")])
    txn_commit(h, offsets=((0, 42),))
    assert fetched(h, stable=False) == {0: (10, NONE)}
    assert fetched(h, stable=True) == {0: (-1, 88)}            # UNSTABLE_OFFSET_COMMIT
    end(h, True)
    assert fetched(h, stable=True) == {0: (42, NONE)}


def test_abort_marker_drops_the_pending_offsets():
    h = Harness(config())
    txn_commit(h, offsets=((0, 42),))
    end(h, False)
    assert fetched(h, stable=True) == {0: (-1, NONE)} and offsets_of(h) == {}


def test_a_plain_commit_after_the_transactional_one_wins():
    h = Harness(config())
    txn_commit(h, offsets=((0, 42),))
    commit(h, t=[(0, 50, "")])
    end(h, True)
    assert offsets_of(h) == {("t", 0): 50}


def test_replay_keeps_offsets_pending_until_the_marker():
    h = Harness(config())
    txn_commit(h, offsets=((0, 42),))
    written = list(h.persisted)
    assert decode(written[-1]).producer_id == PID
    fresh = Harness(config())
    for record in written:
        fresh.shard.replay(decode(record))
    assert fetched(fresh, stable=True) == {0: (-1, 88)}
    end(fresh, True)
    again = Harness(config())
    for record in written + fresh.persisted:
        again.shard.replay(decode(record))
    assert offsets_of(again) == {("t", 0): 42} and fetched(again, stable=True) == {0: (42, NONE)}


@pytest.mark.parametrize("epoch_delta,who,expected", [
    (0, "member", NONE),
    (-1, "member", ILLEGAL_GEN),          # a stale member epoch: Kafka turns STALE_MEMBER_EPOCH into 22
    (1, "member", ILLEGAL_GEN),
    (0, "other", UNKNOWN_MEMBER),
])
def test_consumer_group_member_epochs(epoch_delta, who, expected):
    """KIP-848 groups: the generation of a TxnOffsetCommit is the member epoch."""
    from tests.support.consumer_harness import ConsumerHarness
    h = ConsumerHarness(config(), topics={"t": 2})
    joined = h.hb("m1", 0, topics=["t"])
    member, epoch = joined.member_id, joined.member_epoch
    assert epoch >= 1
    answer = txn_commit(h, generation=epoch + epoch_delta, member=member if who == "member" else "x")
    assert set(codes(answer).values()) == {expected}


def test_consumer_group_empty_admin_commit():
    from tests.support.consumer_harness import ConsumerHarness
    h = ConsumerHarness(config(), topics={"t": 2})
    h.hb("m1", 0, topics=["t"])
    h.hb("m1", -1)                               # leaves: the group is empty
    assert set(codes(txn_commit(h)).values()) == {NONE}


def test_deleting_the_group_tombstones_pending_offsets_too():
    from offsets_log.records import OffsetCommitTombstone
    h = Harness(config())
    commit(h, t=[(0, 10, "")])
    txn_commit(h, offsets=((0, 42), (1, 43)))
    before = len(h.persisted)
    answer = h.replies[h.send(ApiKey.DELETE_GROUPS, 2, REQUESTS[ApiKey.DELETE_GROUPS].cls(groups_names=("g",)))]
    assert answer.results[0].error_code == NONE
    written = [decode(r) for r in h.persisted[before:]]
    assert [w for w in written if isinstance(w, OffsetCommitTombstone)] == [
        OffsetCommitTombstone("g", "t", 0), OffsetCommitTombstone("g", "t", 1)]
    end(h, True)                                    # the commit finds nothing left to apply
    assert "g" not in h.shard.offsets
