"""Kafka's ``uniform`` server-side assignor (UniformAssignor): balanced and sticky."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from coordinator.consumer.assignors._javaorder import replayed_order
from coordinator.consumer.assignors.spec import (GroupAssignment, MemberSpec, TopicSpec,
                                                 check_topics_exist, is_homogeneous)
from coordinator.consumer.assignors.uniform_heterogeneous import assign_heterogeneous
from coordinator.consumer.assignors.uniform_homogeneous import assign_homogeneous


class UniformAssignor:
    """Spreads partitions so member sizes differ by at most one, moving as few as it can; the
    group's subscriptions pick the algorithm (same topics everywhere: the cheap homogeneous one).
    Racks are ignored, as in the Kafka version mirrored."""

    name = "uniform"

    def assign(self, members: Mapping[str, MemberSpec],
               topics: Mapping[uuid.UUID, TopicSpec]) -> GroupAssignment:
        """Every member's new target, each ordered as Kafka would iterate it next round."""
        if not members:
            return {}
        check_topics_exist(members, topics)
        build = assign_homogeneous if is_homogeneous(members) else assign_heterogeneous
        result = build(members, topics)
        frozen = {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in result.items()}
        return {member_id: replayed_order(frozen.get(member_id, {})) for member_id in members}
