"""A KIP-932 share group (Kafka's ShareGroup) and its members: epochs, subscriptions, the target
assignment and which partitions have share state to be assigned from.

A share group changes only by replaying its records (:mod:`coordinator.share.replay`); members
never revoke: a member takes its whole target at once, and a partition may be assigned to
several members.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from coordinator.consumer.group import INITIAL_EPOCH, TopicMetadata, members_in_table_order
from coordinator.consumer.member import EMPTY, Assignment, MemberState


class ShareGroupState(Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareMember:
    """Kafka's ShareGroupMember."""
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned: Assignment = field(default_factory=dict)

    def replace(self, **changes) -> ShareMember:
        return dataclasses.replace(self, **changes)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch


@dataclass(frozen=True, slots=True)
class Initialized:
    """Share-partition state of one topic: initialized (or being initialized) for these
    partitions, at ``timestamp`` (Kafka's InitMapValue)."""
    name: str
    partitions: frozenset[int]
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class StateMetadata:
    """Which topics of a share group id have share state: being created, created, being
    deleted (Kafka keeps this beside the groups: AlterShareGroupOffsets records it for a group
    that does not exist)."""
    initializing: dict = field(default_factory=dict)      # topic id -> Initialized
    initialized: dict = field(default_factory=dict)       # topic id -> Initialized
    deleting: dict = field(default_factory=dict)          # topic id -> topic name

    def assignable(self, topic_id: uuid.UUID, partition: int) -> bool:
        entry = self.initialized.get(topic_id)
        return entry is not None and partition in entry.partitions


NO_STATE = StateMetadata()


class ShareGroup:
    protocol_type = "share"
    group_type = "share"

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = INITIAL_EPOCH
        self.assignment_epoch = INITIAL_EPOCH
        self.assignment_timestamp = 0
        #: the hash of the subscribed topics' metadata the group epoch was last bumped for
        self.metadata_hash = 0
        self.members: dict[str, ShareMember] = {}
        self.members_capacity = 2
        self.target: dict[str, Assignment] = {}
        self.subscribed_names: Counter[str] = Counter()
        self.metadata_refresh_deadline = 0
        self.metadata_refresh_epoch = -1
        self.state = ShareGroupState.EMPTY

    @property
    def generation(self) -> int:
        return self.group_epoch

    def is_empty(self) -> bool:
        return not self.members

    def is_in(self, *states) -> bool:
        return any(self.state.value == s.value for s in states)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, EMPTY)

    def subscribed_topic_names(self, gone: ShareMember | None = None,
                               new: ShareMember | None = None) -> Counter[str]:
        """Subscribers per topic had ``gone`` left and ``new`` joined (computeSubscribedTopicNames)."""
        names = Counter(self.subscribed_names)
        for member, sign in ((gone, -1), (new, 1)):
            if member is not None:
                for name in member.subscribed_topic_names:
                    names[name] += sign
        return Counter({name: n for name, n in names.items() if n > 0})

    def members_in_kafka_order(self) -> list[ShareMember]:
        return members_in_table_order(self.members, self.members_capacity)

    # --- changing (from replay only) ----------------------------------------------------------
    def update_member(self, member: ShareMember) -> None:
        if (len(self.members) + 1) * 0.75 > self.members_capacity:
            self.members_capacity *= 2
        old = self.members.get(member.member_id)
        if old is not None:
            self.subscribed_names.subtract(old.subscribed_topic_names)
        self.members[member.member_id] = member
        self.subscribed_names.update(member.subscribed_topic_names)
        self.subscribed_names = +self.subscribed_names
        self.update_state()

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self.subscribed_names.subtract(old.subscribed_topic_names)
            self.subscribed_names = +self.subscribed_names
        self.update_state()

    def update_state(self) -> None:
        self.state = ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def request_metadata_refresh(self) -> None:
        self.metadata_refresh_deadline = 0

    def metadata_expired(self, now: int) -> bool:
        return now >= self.metadata_refresh_deadline or self.metadata_refresh_epoch != self.group_epoch


def metadata_hash(topics: dict[str, TopicMetadata]) -> int:
    """A 64-bit digest of the subscribed topics' ids, names and partition counts: a change of
    any of them bumps the group epoch, as Kafka's metadata hash does (Kafka computes its own
    digest with Murmur3; only the log records show the value)."""
    if not topics:
        return 0
    text = ";".join(f"{t.topic_id}:{t.name}:{t.num_partitions}" for t in sorted(topics.values(), key=lambda t: t.name))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big", signed=True)
