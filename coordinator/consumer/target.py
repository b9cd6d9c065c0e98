"""Computing a group's new target assignment (Kafka's TargetAssignmentBuilder)."""

from __future__ import annotations

from coordinator.consumer import records as rec
from coordinator.consumer.assignors import MemberSpec, TopicSpec
from coordinator.consumer.group import ConsumerGroup, ResolvedRegex, TopicMetadata
from coordinator.consumer.member import EMPTY, Assignment, ConsumerGroupMember
from coordinator.metadata import MetadataImage


def subscribed_topics(member: ConsumerGroupMember, resolved: dict[str, ResolvedRegex]) -> set[str]:
    """The names a member subscribes to, its regex's resolved topics included."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex and member.subscribed_topic_regex in resolved:
        names |= resolved[member.subscribed_topic_regex].topics
    return names


def build_target(group: ConsumerGroup, epoch: int, assignor, metadata: dict[str, TopicMetadata],
                 image: MetadataImage, resolved: dict[str, ResolvedRegex],
                 updated: ConsumerGroupMember | None = None,
                 removed: str | None = None, now: int = 0) -> tuple[dict[str, Assignment], list]:
    """The new assignment of every member and the records that persist it (the changed
    members' assignments, then the assignment epoch with ``now``, when it was computed)."""
    members = dict(group.members)
    if removed is not None:
        members.pop(removed, None)
    if updated is not None:
        members[updated.member_id] = updated
    specs = {}
    for member_id, member in members.items():
        current = group.target.get(member_id, EMPTY)
        if member is updated and member.instance_id is not None:
            previous = group.static_members.get(member.instance_id)
            if previous is not None and previous != member_id:
                current = group.target.get(previous, EMPTY)   # a static member's replacement
        ids = frozenset(image.topics[n].topic_id for n in subscribed_topics(member, resolved)
                        if n in image.topics)
        specs[member_id] = MemberSpec(rack_id=member.rack_id, instance_id=member.instance_id,
                                      subscribed_topic_ids=ids, assigned=current)
    topics = {t.topic_id: TopicSpec(name=t.name, num_partitions=t.num_partitions)
              for t in metadata.values()}
    assignment = assignor.assign(specs, topics)
    return assignment, target_records(rec, group, specs, assignment, epoch, now)


def target_records(records_of, group, member_ids, assignment: dict, epoch: int, now: int) -> list:
    """The records of a new target assignment (``assignment`` normalised in place: empty topics
    dropped): each member's whose assignment changed, then the epoch with ``now``.
    ``records_of``: the group type's records module (consumer or share)."""
    records = []
    for member_id in sorted(member_ids):
        new = {t: frozenset(ps) for t, ps in assignment.get(member_id, {}).items() if ps}
        assignment[member_id] = new
        if new != group.target.get(member_id):
            records.append(records_of.target_member(group.group_id, member_id, new))
    records.append(records_of.target_epoch(group.group_id, epoch, now))
    return records
