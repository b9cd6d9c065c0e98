"""What a server-side assignor is given and returns (Kafka's GroupSpec, SubscribedTopicDescriber
and GroupAssignment, flattened into plain immutable values)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

#: member id -> topic id -> partitions
GroupAssignment = dict[str, dict[uuid.UUID, frozenset[int]]]


class PartitionAssignorError(Exception):
    """Kafka's PartitionAssignorException: the assignor cannot compute an assignment.

    Raised, as Kafka raises it, when a member subscribes to a topic id missing from ``topics``
    (callers drop topics that do not exist before asking, as Kafka's TopicIds does, so this
    means the topic metadata and the subscriptions disagree), and when the current assignment is
    inconsistent in ways Kafka cannot reach (a partition the topic does not have, with the
    heterogeneous uniform builder; partitions left over by the homogeneous one).
    """


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as the assignor sees it (Kafka's MemberSubscriptionAndAssignmentImpl).

    ``assigned`` is the member's current *target* assignment, the basis of stickiness. Its
    topics are visited in the mapping's own order, as Kafka visits the map it is given.
    """
    rack_id: str | None
    instance_id: str | None
    subscribed_topic_ids: frozenset[uuid.UUID]
    assigned: Mapping[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A subscribed topic (Kafka's SubscribedTopicDescriber for one topic).

    ``partition_racks`` is accepted for the interface's sake: the Kafka version mirrored here
    never consults racks (its describer answers an empty set), so neither do the assignors.
    """
    name: str
    num_partitions: int
    partition_racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


class Assignor(Protocol):
    """A server-side assignor, chosen by the name clients send (group.remote.assignor)."""
    name: str

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[uuid.UUID, TopicSpec]) -> GroupAssignment:
        """The new target assignment of every member (members with nothing get an empty dict)."""
        ...


def is_homogeneous(members: Mapping[str, MemberSpec]) -> bool:
    """Whether every member subscribes to the same topics, which picks the algorithm (Kafka's
    SubscriptionType; a group where nobody subscribes to anything counts as homogeneous)."""
    subscriptions = {m.subscribed_topic_ids for m in members.values()}
    return len(subscriptions) <= 1


def check_topics_exist(members: Mapping[str, MemberSpec],
                       topics: Mapping[uuid.UUID, TopicSpec]) -> None:
    """Refuse subscriptions to topics the metadata does not describe, as Kafka's assignors do
    (its describer answers -1 partitions for them)."""
    for member in members.values():
        for topic_id in member.subscribed_topic_ids:
            if topic_id not in topics:
                raise PartitionAssignorError(
                    f"Members are subscribed to topic {topic_id} which doesn't exist in the "
                    "topic metadata.")
