"""The classic group states and their legal transitions (Kafka's ClassicGroupState).

Rules:
* Empty: no members; JoinGroup from a new member starts a rebalance; Sync, Heartbeat and
  Leave get UNKNOWN_MEMBER_ID; only "simple" commits (generation -1) are accepted.
* PreparingRebalance: JoinGroups are parked until every member rejoined or the join timer
  fires; Heartbeat and SyncGroup get REBALANCE_IN_PROGRESS; commits of the old generation pass.
* CompletingRebalance: JoinGroups were answered; SyncGroups are parked until the leader's
  arrives; heartbeats pass; commits get REBALANCE_IN_PROGRESS.
* Stable: the assignment was handed out; the leader's JoinGroup, changed protocols, a new
  member, a leave or an expiry start the next rebalance.
* Dead: the group is gone (deleted, expired); every request treats it as unavailable.
"""

from __future__ import annotations

import enum


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class IllegalTransition(Exception):
    """A state change the table below forbids: a coordinator bug, never the client's fault."""


_ALL = frozenset(GroupState)

#: state -> the states it may be entered from
LEGAL_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE,
                                               GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: _ALL,
}


def check_transition(current: GroupState, target: GroupState) -> None:
    if current not in LEGAL_PREVIOUS[target]:
        raise IllegalTransition(f"{current.value} -> {target.value} is not a legal transition")
