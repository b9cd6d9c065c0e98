"""A classic consumer group and its members: the data the state machine works on.

Plain mutable objects owned by one shard; every rule about *when* they change lives in
:mod:`coordinator.shard`. Member order is insertion order, as in Kafka's member map, which
decides who succeeds a leader that leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.java_order import hash_map_order
from coordinator.classic.state import GroupState, check_transition


@dataclass(slots=True)
class Parked:
    """A request waiting for the group (a JoinGroup or SyncGroup), answered later."""
    token: object
    version: int


@dataclass(slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join: Parked | None = None
    sync: Parked | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass(slots=True)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState | None = None
    generation: int = 0
    protocol_type: str = ""                     # "" = a "simple" group that only commits offsets
    protocol_name: str | None = None
    leader_id: str | None = None
    current_state_ts: int = -1
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)   # instance id -> member id
    pending_members: set[str] = field(default_factory=set)         # KIP-394 ids not yet joined
    pending_sync: set[str] = field(default_factory=set)            # members yet to send SyncGroup
    new_member_added: bool = False
    subscribed_topics: frozenset[str] | None = None                # None = unknown (treat all as used)
    #: protocol name -> how many members offer it (Kafka's supportedProtocols): what a joining
    #: member is checked against, without going through every member on every join
    protocol_counts: dict[str, int] = field(default_factory=dict)
    rebalance_started_ts: int | None = None     # for the journal's durations only; no rule reads it

    # --- state ---------------------------------------------------------------------------
    def transition(self, target: GroupState, now: int) -> None:
        check_transition(self.state, target)
        self.previous_state, self.state = self.state, target
        self.current_state_ts = now

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    # --- membership ----------------------------------------------------------------------
    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        self._count(member.protocols, 1)
        if member.is_static:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._count(member.protocols, -1)
        if member.is_static and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def set_protocols(self, member: Member, protocols: list[tuple[str, bytes]]) -> None:
        """A member's protocols change only here, so that the counts stay right."""
        self._count(member.protocols, -1)
        member.protocols = protocols
        self._count(protocols, 1)

    def _count(self, protocols: list[tuple[str, bytes]], delta: int) -> None:
        counts = self.protocol_counts
        for name in {name for name, _ in protocols}:
            counts[name] = counts.get(name, 0) + delta
            if not counts[name]:
                del counts[name]

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def replace_static(self, old_id: str, new_id: str) -> Member:
        """Give a static member a new member id, keeping its place, assignment and leadership."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[member.group_instance_id] = new_id
        member.is_new = False
        if self.leader_id == old_id:
            self.leader_id = new_id
        # Like Kafka's replaceStaticMember, pending_sync keeps the old id: if the old incarnation
        # had not synced yet, the pending-sync timer still fires and forces a rebalance.
        return member

    def awaiting_join(self) -> list[Member]:
        return [m for m in self.members.values() if m.join is not None]

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.join is not None for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # --- protocols -----------------------------------------------------------------------
    def candidate_protocols(self) -> set[str]:
        """The protocols every member offers."""
        everyone = len(self.members)
        return {name for name, count in self.protocol_counts.items() if count == everyone}

    def supports(self, protocol_type: str, names: list[str]) -> bool:
        """May a member offering these protocols join? (INCONSISTENT_GROUP_PROTOCOL if not).

        Kafka decides by state, not by member count: outside Empty the type must match the
        group's, and a name counts as supported when every current member offers it (so any
        name passes in a PreparingRebalance group whose members all left).
        """
        if self.is_in(GroupState.EMPTY):
            return bool(protocol_type) and bool(names)
        everyone = len(self.members)
        return (self.protocol_type != "" and protocol_type == self.protocol_type
                and any(self.protocol_counts.get(name, 0) == everyone for name in names))

    def select_protocol(self) -> str:
        """Most votes wins; a tie goes to the name Kafka's vote map would iterate first.

        Kafka counts votes in a java.util.HashMap and keeps the first maximum it meets, so a tie
        is decided by HashMap iteration order: bucket index, then first vote. Reproducing it
        keeps our choice identical to Kafka's instead of merely deterministic.
        """
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        order = hash_map_order(list(votes))
        return next(name for name in order if votes[name] == best)

    def maybe_elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else promote any member that did; False if none did."""
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.join is not None:
            return True
        for m in self.members.values():
            if m.join is not None:
                self.leader_id = m.member_id
                return True
        return False
