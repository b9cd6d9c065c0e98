"""A member of a KIP-848 consumer group (Kafka's ConsumerGroupMember) and its assignment state."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Mapping

from protocol.uuids import kafka_uuid

#: topic id -> partitions; never changed in place once built
Assignment = Mapping[uuid.UUID, frozenset[int]]
EMPTY: Assignment = MappingProxyType({})

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(IntEnum):
    """Kafka's MemberState, with its record values."""
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class ClassicMetadata:
    """What a member that joined with the classic protocol (JoinGroup) keeps: its session
    timeout and its protocols, in preference order (Kafka's ClassicMemberMetadata)."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol named in its join answers (Kafka takes the first it sent)."""
        return self.protocols[0][0]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: (topic id, partition) -> the epoch it was assigned at, for every partition it holds
    #: (KIP-1251: a commit with an older epoch may still commit a partition it had then)
    assigned_at: Mapping[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    classic: ClassicMetadata | None = None       # set while it uses the classic protocol

    def replace(self, **changes) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)

    def with_epoch(self, epoch: int, **changes) -> ConsumerGroupMember:
        """Kafka's updateMemberEpoch: the old epoch becomes the previous one."""
        return dataclasses.replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch,
                                   **changes)

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == target_epoch

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch a partition it holds (assigned or revoking) was assigned at; None if it
        does not hold it."""
        return self.assigned_at.get((topic_id, partition))

    def owned_partitions(self):
        """(topic id, partition) of every partition it holds, revoking ones included."""
        for assignment in (self.assigned, self.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    yield topic_id, p


def new_member_id() -> str:
    """A member id as Kafka makes one (Uuid.randomUuid().toString(): 22 URL-safe base64 chars)."""
    return kafka_uuid(uuid.uuid4())


def assignment_of(topic_partitions) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment from wire/record ``TopicPartitions`` entries (empty lists dropped)."""
    return {tp.topic_id: frozenset(tp.partitions) for tp in topic_partitions if tp.partitions}


def epochs_of(topic_partitions, default: int) -> dict[tuple[uuid.UUID, int], int]:
    """The assignment epochs a current-assignment record gives its partitions. A record of an
    older version (or whose epochs do not match its partitions) has none: Kafka then takes the
    member epoch, never below 0 (a static member that left has -2)."""
    default = max(default, 0)
    epochs = {}
    for tp in topic_partitions:
        given = tp.assignment_epochs
        if given is not None and len(given) == len(tp.partitions):
            epochs.update(((tp.topic_id, p), e) for p, e in zip(tp.partitions, given))
        else:
            epochs.update(((tp.topic_id, p), default) for p in tp.partitions)
    return epochs


def epochs_at(assignment: Assignment, epoch: int) -> dict[tuple[uuid.UUID, int], int]:
    """Every partition of ``assignment`` assigned at ``epoch``."""
    return {(t, p): epoch for t, ps in assignment.items() for p in ps}
