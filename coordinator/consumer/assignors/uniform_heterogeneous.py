"""The uniform assignor when members subscribe to different topics (Kafka's
UniformHeterogeneousAssignmentBuilder, as reworked by KAFKA-17710): keep every current partition
a member is still subscribed to, hand the rest to the least loaded subscribers topic by topic,
then move partitions from the most to the least loaded subscribers until each topic's
subscribers differ by at most one (or sixteen passes have been made)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from coordinator.consumer.assignors import _javaorder as jo
from coordinator.consumer.assignors.spec import MemberSpec, PartitionAssignorError, TopicSpec

#: Passes over the topics before giving up on perfect balance (overlapping subscriptions can
#: converge slowly; each pass roughly halves the imbalance).
MAX_ITERATION_COUNT = 16


class _Balancer:
    """Two moving ranges over a topic's subscribers sorted by load: the least loaded range grows
    rightwards as its members receive partitions, the most loaded one leftwards as its members
    give them up; balanced once their partition counts differ by at most one.

    Members are indices into the builder's member list; ``sizes`` is shared with the builder and
    read live, as Kafka's MemberAssignmentBalancer does.
    """

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = self.least_count = self.next_least = 0
        self.most_start = self.most_end = self.most_count = self.next_most = 0

    def initialize(self, members: list[int]) -> int:
        """Start over with ``members``; the spread between the most and least loaded."""
        sizes = self.sizes
        self.members = sorted(members, key=lambda m: (sizes[m], m))
        n = len(self.members)
        lowest, highest = sizes[self.members[0]], sizes[self.members[-1]]
        self.least_end, self.least_count, self.next_least = 0, lowest - 1, 0
        self.most_start, self.most_end, self.most_count, self.next_most = n, n, highest + 1, n - 1
        return highest - lowest

    def next_least_loaded(self) -> int:
        """The member to give the next partition to (assumes it will get one)."""
        members, sizes = self.members, self.sizes
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(members) and sizes[members[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from (assumes it will lose one), or -1."""
        members, sizes = self.members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Emptied by exclusions: restart from the next member down so the range grows.
                self.most_count = sizes[members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member just returned by :meth:`next_most_loaded` (it has nothing to give)."""
        members, i, last = self.members, self.next_most + 1, self.most_end - 1
        members[i], members[last] = members[last], members[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    """One run of the heterogeneous algorithm over members numbered in
    :func:`~._javaorder.member_order` (Java ``HashMap`` order of the ids: member numbers break
    every tie between equally loaded members, so Kafka's answer depends on this order). Topics
    are always visited sorted (by partitions per subscriber, descending; subscriber count; id),
    so no other iteration order matters."""

    def __init__(self, members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]):
        self.members = members
        self.member_ids = jo.member_order(members, len(members))
        self.num_partitions: dict[uuid.UUID, int] = {}
        self.subscribers: dict[uuid.UUID, list[int]] = {}
        for index, member_id in enumerate(self.member_ids):
            for topic_id in members[member_id].subscribed_topic_ids:
                topic = topics.get(topic_id)
                if topic is None:
                    raise PartitionAssignorError(
                        f"Members are subscribed to topic {topic_id} which doesn't exist in the "
                        "topic metadata.")
                self.num_partitions[topic_id] = topic.num_partitions
                self.subscribers.setdefault(topic_id, []).append(index)
        self.sizes = [0] * len(self.member_ids)
        self.owners = {t: [-1] * n for t, n in self.num_partitions.items()}
        self.target: list[dict[uuid.UUID, set[int]]] = []

    def build(self) -> dict[str, dict[uuid.UUID, set[int]]]:
        if not self.num_partitions:
            return {}
        self.keep_subscribed()
        self.assign_unassigned()
        movable = [t for t, subs in self.subscribers.items() if len(subs) >= 2]
        if movable:
            self.balance(movable)
        return dict(zip(self.member_ids, self.target))

    def sort_topics(self, topic_ids) -> list[uuid.UUID]:
        """Topics with the most partitions per subscriber first: they are the hardest to spread."""
        def key(t: uuid.UUID):
            subscribers = len(self.subscribers[t])
            return (-(self.num_partitions[t] / subscribers), subscribers, jo.uuid_key(t))
        return sorted(topic_ids, key=key)

    def keep_subscribed(self) -> None:
        """Start from the current assignment minus the topics a member no longer subscribes to."""
        for index, member_id in enumerate(self.member_ids):
            member = self.members[member_id]
            kept: dict[uuid.UUID, set[int]] = {}
            for topic_id, partitions in member.assigned.items():
                if topic_id not in member.subscribed_topic_ids:
                    continue
                owners, n = self.owners[topic_id], self.num_partitions[topic_id]
                for p in partitions:
                    if not 0 <= p < n:
                        raise PartitionAssignorError(
                            f"Member {member_id} is assigned partition {p} of topic {topic_id}, "
                            f"which has {n} partitions.")
                    owners[p] = index
                self.sizes[index] += len(partitions)
                kept[topic_id] = set(partitions)
            self.target.append(kept)

    def assign_unassigned(self) -> None:
        """Deal every unowned partition to the least loaded subscribers of its topic."""
        unassigned = {t: [p for p, owner in enumerate(owners) if owner == -1]
                      for t, owners in self.owners.items()}
        balancer = _Balancer(self.sizes)
        for topic_id in self.sort_topics(t for t, ps in unassigned.items() if ps):
            balancer.initialize(self.subscribers[topic_id])
            for partition in unassigned[topic_id]:
                self.move(topic_id, partition, balancer.next_least_loaded())

    def balance(self, topic_ids: list[uuid.UUID]) -> None:
        """Sweep the topics until a whole sweep moves nothing, or the pass limit is hit."""
        ordered = self.sort_topics(topic_ids)
        balancer = _Balancer(self.sizes)
        last_moved = -1
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic_id in enumerate(ordered):
                if index == last_moved:
                    return
                if self.balance_topic(topic_id, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def balance_topic(self, topic_id: uuid.UUID, balancer: _Balancer) -> int:
        """Move this topic's partitions from its most to its least loaded subscribers; how many."""
        if balancer.initialize(self.subscribers[topic_id]) <= 1:
            return 0
        owners = self.owners[topic_id]
        # Partitions grouped by owner, so each owner's are a slice whose end we can pop from.
        partitions = sorted(range(self.num_partitions[topic_id]), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1

        moved = 0
        while not balancer.is_balanced():
            donor = balancer.next_most_loaded()
            while donor != -1 and end.get(donor, 0) - start.get(donor, 0) <= 0:
                balancer.exclude_most_loaded()
                donor = balancer.next_most_loaded()
            if donor == -1:
                break
            end[donor] -= 1
            partition = partitions[end[donor]]
            receiver = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(topic_id, partition, receiver)
            moved += 1
        return moved

    def move(self, topic_id: uuid.UUID, partition: int, member: int) -> None:
        """(Re)assign a partition, keeping owners and sizes in step."""
        owners = self.owners[topic_id]
        previous = owners[partition]
        if previous != -1:
            held = self.target[previous].get(topic_id)
            if held is not None:
                held.discard(partition)
                if not held:
                    del self.target[previous][topic_id]
            owners[partition] = -1
            self.sizes[previous] -= 1
        self.target[member].setdefault(topic_id, set()).add(partition)
        owners[partition] = member
        self.sizes[member] += 1


def assign_heterogeneous(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
                         ) -> dict[str, dict[uuid.UUID, set[int]]]:
    """The heterogeneous uniform assignment (members absent from the result get nothing)."""
    return _Builder(members, topics).build()
