"""A KIP-848 consumer group (Kafka's ConsumerGroup): epochs, members, target assignment.

The group changes only by replaying records (:meth:`ConsumerGroupManager.replay`), live writes
and recovery alike; everything else here reads it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from enum import Enum

from coordinator.consumer.member import EMPTY, Assignment, ConsumerGroupMember
from coordinator.routing import java_string_hash


#: the group epoch and assignment epoch of a new group
INITIAL_EPOCH = 1
#: the constant of Kafka's BaseHashTable.findSlot (a signed long)
_FIND_SLOT_MULTIPLIER = -7046029254386353131


class GroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A subscribed topic as the group last saw it (ConsumerGroupPartitionMetadata)."""
    topic_id: uuid.UUID
    name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """The topics a regular expression matched, and the metadata version it was matched on."""
    topics: frozenset[str]
    version: int
    timestamp: int


class ConsumerGroup:
    protocol_type = "consumer"
    group_type = "consumer"

    def __init__(self, group_id: str):
        self.group_id = group_id
        # A new group starts at epoch 1 with an empty assignment at epoch 1, so that its first
        # members reconcile to a real epoch even before the first assignment exists (Kafka 4.3,
        # KAFKA-20268); the first computed assignment is epoch 2.
        self.group_epoch = INITIAL_EPOCH
        self.assignment_epoch = INITIAL_EPOCH
        #: when the current target assignment was computed (0: unknown, e.g. converted from a
        #: classic group or written by an older version): the next one waits for
        #: group.consumer.assignment.interval.ms after it
        self.assignment_timestamp = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        #: the size of Kafka's table of the members (a TimelineHashMap, which never shrinks):
        #: its slots are the order ConsumerGroupDescribe lists the members in
        self.members_capacity = 2
        self.static_members: dict[str, str] = {}          # instance id -> member id
        self.target: dict[str, Assignment] = {}            # member id -> target assignment
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        self.subscription_metadata: dict[str, TopicMetadata] = {}
        self.subscribed_names: Counter[str] = Counter()   # explicit subscriptions per topic
        self.regex_members: Counter[str] = Counter()      # members per regular expression
        self.resolved: dict[str, ResolvedRegex] = {}
        self.server_assignors: Counter[str] = Counter()
        self.classic_protocols: Counter[str] = Counter()  # classic members per protocol name
        self.classic_member_count = 0
        #: when the subscription metadata must next be recomputed, and at which group epoch
        self.metadata_refresh_deadline = 0
        self.metadata_refresh_epoch = -1
        self.state = GroupState.EMPTY
        self.state_ts = -1

    # --- reading ------------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        """The group epoch, under the name the journal uses for every group type."""
        return self.group_epoch

    def is_empty(self) -> bool:
        return not self.members

    def is_in(self, *states) -> bool:
        """Compares by state name, so the classic group's Empty and Dead match too."""
        return any(self.state.value == s.value for s in states)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member holding a partition, or -1 if it is free."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def target_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """A member's target assignment; a static member that replaced another inherits its."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None:
                return self.target.get(previous, EMPTY)
        return self.target.get(member_id, EMPTY)

    def subscribed_topic_names(self, *gone: ConsumerGroupMember, new: ConsumerGroupMember | None = None,
                               resolved: dict[str, ResolvedRegex] | None = None) -> Counter[str]:
        """Subscribers per topic name (explicit names and resolved regexes) had the members
        ``gone`` left and ``new`` joined (Kafka's computeSubscribedTopicNames); ``resolved``
        replaces the group's regex resolutions (newer ones not yet recorded)."""
        resolved = self.resolved if resolved is None else resolved
        names = Counter(self.subscribed_names)
        regexes = Counter(self.regex_members)
        for member, sign in [(m, -1) for m in gone] + [(new, 1)]:
            if member is None:
                continue
            for name in member.subscribed_topic_names:
                names[name] += sign
            if member.subscribed_topic_regex:
                regexes[member.subscribed_topic_regex] += sign
        for regex, count in regexes.items():
            if count > 0 and regex in resolved:
                for name in resolved[regex].topics:
                    names[name] += count
        return Counter({name: n for name, n in names.items() if n > 0})

    def supports_classic_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """May a classic member with these protocols join? (Kafka's supportsClassicProtocols:
        the "consumer" type, and a protocol every classic member has.)"""
        if protocol_type != "consumer":
            return False
        if self.is_empty():
            return bool(names)
        return any(self.classic_protocols.get(n, 0) == self.classic_member_count for n in names)

    def is_subscribed(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def preferred_assignor(self, old: ConsumerGroupMember | None = None,
                           new: ConsumerGroupMember | None = None) -> str | None:
        """The server assignor most members ask for (Kafka's computePreferredServerAssignor)."""
        counts = Counter(self.server_assignors)
        if old is not None and old.server_assignor:
            counts[old.server_assignor] -= 1
        if new is not None and new.server_assignor:
            counts[new.server_assignor] += 1
        counts = +counts
        return max(counts, key=lambda a: counts[a]) if counts else None

    def members_in_kafka_order(self) -> list[ConsumerGroupMember]:
        return members_in_table_order(self.members, self.members_capacity)

    # --- changing (from replay only) ----------------------------------------------------------
    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if (len(self.members) + 1) * 0.75 > self.members_capacity:
            self.members_capacity *= 2       # Kafka's table grows before every put, a replace too
        if old is not None:
            self._count(old, -1)
            for key in old.owned_partitions():
                self.partition_epochs.pop(key, None)
        self.members[member.member_id] = member
        self._count(member, 1)
        for key in member.owned_partitions():
            self.partition_epochs[key] = member.member_epoch
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self.update_state()

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._count(old, -1)
        for key in old.owned_partitions():
            if self.partition_epochs.get(key) == old.member_epoch:
                del self.partition_epochs[key]
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]
        self.update_state()

    def _count(self, member: ConsumerGroupMember, sign: int) -> None:
        for name in member.subscribed_topic_names:
            self.subscribed_names[name] += sign
        if member.subscribed_topic_regex:
            self.regex_members[member.subscribed_topic_regex] += sign
        if member.server_assignor:
            self.server_assignors[member.server_assignor] += sign
        if member.classic is not None:
            self.classic_member_count += sign
            for name, _ in member.classic.protocols:
                self.classic_protocols[name] += sign
        for counter in (self.subscribed_names, self.regex_members, self.server_assignors,
                        self.classic_protocols):
            for key in [k for k, n in counter.items() if n <= 0]:
                del counter[key]

    def update_state(self) -> None:
        """Kafka's maybeUpdateGroupState."""
        if not self.members:
            state = GroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            state = GroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            state = GroupState.RECONCILING
        else:
            state = GroupState.STABLE
        self.state = state

    def request_metadata_refresh(self) -> None:
        """The topics changed: recompute the subscription metadata at the next heartbeat."""
        self.metadata_refresh_deadline = 0

    def metadata_expired(self, now: int) -> bool:
        return now >= self.metadata_refresh_deadline or self.metadata_refresh_epoch != self.group_epoch


def members_in_table_order(members: dict, capacity: int) -> list:
    """The members as Kafka's member table (a TimelineHashMap of ``capacity`` slots) iterates
    them: slot by slot (Kafka's BaseHashTable.findSlot of the member id's String.hashCode),
    within a slot the last to come in first (a dict keeps that order: an update keeps its place,
    a member that left and came back is the newest)."""
    shift = 65 - capacity.bit_length()

    def slot(member_id: str) -> int:
        h = java_string_hash(member_id) & 0xFFFFFFFF
        h -= (h & 0x80000000) << 1                       # the signed int
        return ((h * _FIND_SLOT_MULTIPLIER) & 0xFFFFFFFFFFFFFFFF) >> shift
    order = {member_id: i for i, member_id in enumerate(members)}
    return sorted(members.values(), key=lambda m: (slot(m.member_id), -order[m.member_id]))
