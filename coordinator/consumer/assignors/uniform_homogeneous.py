"""The uniform assignor when every member subscribes to the same topics (Kafka's
UniformHomogeneousAssignmentBuilder): balance first (sizes differ by at most one), then keep as
much of each member's current assignment as that balance allows."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from coordinator.consumer.assignors import _javaorder as jo
from coordinator.consumer.assignors.spec import MemberSpec, PartitionAssignorError, TopicSpec

Assignment = dict[uuid.UUID, frozenset[int] | set[int]]


def assign_homogeneous(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec]
                       ) -> dict[str, Assignment]:
    """Give each member its quota (total / members, the first ``total % members`` in
    :func:`~._javaorder.member_order` one more), keeping current partitions up to it.

    Iteration orders, each chosen because Kafka's result depends on it: members in Java
    ``HashMap`` order of their ids (this decides who gets the extra partitions and who is
    filled first), subscribed topics in Java ``HashSet`` order of their ids (this orders the
    unassigned partitions), a member's current topics in the mapping's own order and its
    partitions in Java ``HashSet`` order (these decide which partitions a member over quota keeps).
    """
    member_ids = jo.member_order(members, len(members))
    subscription = members[member_ids[0]].subscribed_topic_ids
    if not subscription:
        return {}
    subscribed = jo.topic_set_order(subscription, len(subscription))

    taken: dict[uuid.UUID, set[int]] = {}
    for member in members.values():
        for topic_id, partitions in member.assigned.items():
            taken.setdefault(topic_id, set()).update(partitions)

    unassigned: list[tuple[uuid.UUID, int]] = []
    total = 0
    for topic_id in subscribed:
        topic = topics.get(topic_id)
        if topic is None:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
        held = taken.get(topic_id, ())
        unassigned.extend((topic_id, p) for p in range(topic.num_partitions) if p not in held)
        total += topic.num_partitions

    min_quota, extra = divmod(total, len(member_ids))
    target: dict[str, Assignment] = {}
    unfilled: list[tuple[str, int]] = []
    for member_id in member_ids:
        quota = min_quota + (1 if extra > 0 else 0)
        extra -= 1
        kept: Assignment = {}
        for topic_id, partitions in members[member_id].assigned.items():
            if topic_id not in subscription:
                continue
            if len(partitions) <= quota:
                quota -= len(partitions)
                kept[topic_id] = partitions
                continue
            ordered = jo.partition_order(partitions, len(partitions))
            unassigned.extend((topic_id, p) for p in ordered[quota:])
            if quota:
                kept[topic_id] = frozenset(ordered[:quota])
            quota = 0
        if quota > 0:
            unfilled.append((member_id, quota))
        target[member_id] = kept

    next_index = 0
    for member_id, quota in unfilled:
        assignment = target[member_id]
        for topic_id, partition in unassigned[next_index:next_index + quota]:
            partitions = assignment.get(topic_id)
            if not isinstance(partitions, set):
                assignment[topic_id] = partitions = set(partitions or ())
            partitions.add(partition)
        next_index += quota
    if next_index < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return target
