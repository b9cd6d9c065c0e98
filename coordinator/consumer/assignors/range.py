"""Kafka's ``range`` server-side assignor (RangeAssignor, as rewritten by KAFKA-16944)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from coordinator.consumer.assignors import _javaorder as jo
from coordinator.consumer.assignors.spec import (GroupAssignment, MemberSpec, TopicSpec,
                                                 check_topics_exist)


class RangeAssignor:
    """Splits each topic into contiguous ranges, one per subscriber in member order, the first
    ``partitions % subscribers`` one partition longer; members with the same topics and topics
    with the same partition count therefore line up (co-partitioning, for joins).

    Member order: static members first by instance id, then the others by member id (Kafka's
    sortMemberIds; ``String.compareTo`` order), so replacing a static member keeps its ranges.
    The current assignment is ignored, and so are racks, as in the Kafka version mirrored.
    """

    name = "range"

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[uuid.UUID, TopicSpec]) -> GroupAssignment:
        """Every member's ranges, computed afresh (range is not sticky beyond its member order)."""
        if not members:
            return {}
        check_topics_exist(members, topics)

        def rank(member_id: str):
            instance_id = members[member_id].instance_id
            if instance_id is not None:
                return (0, jo.string_key(instance_id))
            return (1, jo.string_key(member_id))

        # Sorting the Java iteration order keeps Kafka's (stable) result even for the
        # degenerate case of two members sharing an instance id.
        ordered = sorted(jo.member_order(members, len(members)), key=rank)

        subscribers: dict[uuid.UUID, int] = {}
        for member in members.values():
            for topic_id in member.subscribed_topic_ids:
                subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
        # topic -> [next range start, members still owed an extra partition]
        cursor = {t: [0, topics[t].num_partitions % n] for t, n in subscribers.items()}

        result: GroupAssignment = {}
        for member_id in ordered:
            assignment: dict[uuid.UUID, frozenset[int]] = {}
            for topic_id in members[member_id].subscribed_topic_ids:
                n = topics[topic_id].num_partitions
                state = cursor[topic_id]
                start, quota = state[0], n // subscribers[topic_id]
                if state[1] > 0:
                    quota += 1
                    state[1] -= 1
                end = min(start + quota, n)
                state[0] = end
                if start < end:
                    assignment[topic_id] = frozenset(range(start, end))
            result[member_id] = jo.replayed_order(assignment)
        return {member_id: result[member_id] for member_id in members}
