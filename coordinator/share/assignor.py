"""Kafka's ``simple`` share-group assignor (SimpleAssignor): a partition may go to several
members, each partition to about members / partitions of them (rounded up), each member to about
as many partitions as the others, keeping what members already have where that balance allows.

Kafka's result depends on the iteration order of its hash maps and sets, so the algorithm runs
here over :class:`~coordinator.java_order.HashTable`, which iterates as Java's do.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping

from coordinator.consumer.assignors import _javaorder as jo
from coordinator.consumer.assignors.spec import MemberSpec, PartitionAssignorError, TopicSpec
from coordinator.java_order import HashTable, string_hash

Assignment = dict[uuid.UUID, frozenset[int]]
_MASK = 0xFFFFFFFF


def _tp_hash(tp: tuple[uuid.UUID, int]) -> int:
    """The hash of Kafka's ``TopicIdPartition`` record: 31 * topic id hash + partition."""
    return (31 * jo.uuid_hash(tp[0]) + tp[1]) & _MASK


def _sizing(n: int) -> int:
    """AssignorHelpers.newHashMap/newHashSet: the capacity asked for ``n`` entries."""
    return int((n + 1) / 0.75 + 1)


def _table_of(assignment: Mapping[uuid.UUID, frozenset[int]]) -> HashTable:
    """A member's assignment as Kafka holds it after replaying its record."""
    table = HashTable(jo.uuid_hash)
    for topic_id, partitions in jo.replayed_order(dict(assignment)).items():
        table.put(topic_id, HashTable.copy_of(jo.int_hash, jo.partition_order(partitions, len(partitions))))
    return table


def _deep_copy(table: HashTable) -> HashTable:
    copy = HashTable(jo.uuid_hash, len(table))
    for topic_id, partitions in table.items():
        copy.put(topic_id, HashTable.copy_of(jo.int_hash, list(partitions)))
    return copy


def _desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    """How many partitions each of ``members`` should get, as Kafka splits them (in doubles)."""
    precise = sharing * partitions / members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(members)]


def _sharing(members: int, partitions: int) -> int:
    return 0 if partitions == 0 else (members + partitions - 1) // partitions


class _Builder:
    """What both of Kafka's builders share: members numbered in GroupSpec order, their old
    assignments and the copies made of them as they change."""

    def __init__(self, members: Mapping[str, MemberSpec]):
        self.member_ids = jo.member_order(members, len(members))
        self.old = {i: _table_of(members[m].assigned) for i, m in enumerate(self.member_ids)}
        self.new: dict[int, HashTable] = {}

    def new_assignment(self, index: int) -> HashTable:
        if index not in self.new:
            self.new[index] = _deep_copy(self.old[index])
        return self.new[index]

    def result(self) -> dict[str, Assignment]:
        out = {}
        for index, member_id in enumerate(self.member_ids):
            table = self.new.get(index, self.old[index])
            out[member_id] = {t: frozenset(ps) for t, ps in table.items()}
        return out


def _topic_order(topic_ids, topics: Mapping[uuid.UUID, TopicSpec]) -> list[uuid.UUID]:
    """A member's subscribed topics in the order Kafka's TopicIds view iterates them: that of
    the ``HashSet`` of their names."""
    names = {topics[t].name: t for t in topic_ids if t in topics}
    missing = [t for t in topic_ids if t not in topics]
    return [names[n] for n in HashTable.copy_of(string_hash, sorted(names))] + missing


def _target_partitions(topic_ids, topics: Mapping[uuid.UUID, TopicSpec],
                       assignable: Callable[[uuid.UUID, int], bool]) -> dict[uuid.UUID, list[int]]:
    target = {}
    for topic_id in topic_ids:
        topic = topics.get(topic_id)
        if topic is None:
            raise PartitionAssignorError(
                f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
        target[topic_id] = [p for p in range(topic.num_partitions) if assignable(topic_id, p)]
    return target


def _fill(by_partition: HashTable, unfilled: HashTable, sharing: int, counts, by_member: HashTable,
          give: Callable[[int, object], None]) -> None:
    """assignRemainingPartitions: partitions short of ``sharing`` members get unfilled members,
    round and round, until every member has its count or no partition takes one more."""
    members = iter(list(unfilled))
    assigned_this_round = False
    for partition, holders in list(by_partition.items()):
        if len(holders) < sharing:
            to_make = sharing - len(holders)
            while to_make > 0:
                index = next(members, None)
                while index is not None and index not in unfilled:
                    index = next(members, None)
                if index is None:
                    if not assigned_this_round:
                        break
                    members = iter(list(unfilled))
                    assigned_this_round = False
                    index = next(members, None)
                    if index is None:
                        break
                if index not in holders:
                    give(index, partition)
                    by_member.compute_if_absent(index, lambda: HashTable(_hash_of(partition))).add(partition)
                    to_make -= 1
                    assigned_this_round = True
                    if len(by_member.get(index)) >= counts[index]:
                        unfilled.remove(index)
        if not len(unfilled):
            break


def _hash_of(key) -> Callable:
    return _tp_hash if isinstance(key, tuple) else jo.int_hash


def _homogeneous(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec],
                 assignable) -> dict[str, Assignment]:
    b = _Builder(members)
    subscribed = members[b.member_ids[0]].subscribed_topic_ids
    if not subscribed:
        return {}
    order = _topic_order(subscribed, topics)
    targets = [(t, p) for t, ps in _target_partitions(order, topics, assignable).items() for p in ps]
    n = len(b.member_ids)
    sharing = _sharing(n, len(targets))
    counts = _desired_counts(sharing, len(targets), n)
    by_partition = HashTable(_tp_hash, _sizing(len(targets)))
    by_member = HashTable(jo.int_hash, _sizing(n))
    unfilled = HashTable(jo.int_hash, _sizing(n))
    overfilled = HashTable(jo.int_hash, _sizing(n))
    # revokeUnassignablePartitions
    for index in range(n):
        old, copied, held = b.old[index], False, 0
        for topic_id, partitions in old.items():
            if topic_id in subscribed:
                for p in partitions:
                    held += 1
                    by_partition.compute_if_absent((topic_id, p), lambda: HashTable(jo.int_hash)).add(index)
                    by_member.compute_if_absent(index, lambda: HashTable(_tp_hash)).add((topic_id, p))
                    if held >= counts[index] and not copied:
                        b.new_assignment(index)
                        copied = True
            else:
                b.new_assignment(index).remove(topic_id)
                copied = True
        if held < counts[index]:
            unfilled.add(index)
        elif held > counts[index]:
            overfilled.add(index)
    # revokeOverfilledMembers
    for index in overfilled:
        mine = by_member.get(index)
        if len(mine) > counts[index]:
            for tp in list(mine):
                b.new[index].get(tp[0]).remove(tp[1])
                by_partition.get(tp).remove(index)
                mine.remove(tp)
                if len(mine) == counts[index]:
                    break
    # revokeOversharedPartitions
    for tp, holders in list(by_partition.items()):
        count = len(holders)
        if count > sharing:
            for index in list(holders):
                partitions = b.new_assignment(index).get(tp[0])
                if partitions is not None and partitions.remove(tp[1]):
                    count -= 1
                    holders.remove(index)
                    by_member.get(index).remove(tp)
                    unfilled.add(index)
                if count <= sharing:
                    break
    for tp in targets:
        by_partition.compute_if_absent(tp, lambda: HashTable(jo.int_hash))
    if len(unfilled):
        _fill(by_partition, unfilled, sharing, counts, by_member,
              lambda index, tp: b.new_assignment(index).compute_if_absent(
                  tp[0], lambda: HashTable(jo.int_hash)).add(tp[1]))
    return b.result()


def _heterogeneous(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec],
                   assignable) -> dict[str, Assignment]:
    b = _Builder(members)
    subscribed_set = HashTable(jo.uuid_hash)
    for member_id in b.member_ids:
        for topic_id in _topic_order(members[member_id].subscribed_topic_ids, topics):
            subscribed_set.add(topic_id)
    if not len(subscribed_set):
        return {}
    n = len(b.member_ids)
    target_by_topic = _target_partitions(list(subscribed_set), topics, assignable)
    subscribers: dict[uuid.UUID, list[int]] = {}
    for index, member_id in enumerate(b.member_ids):
        for topic_id in _topic_order(members[member_id].subscribed_topic_ids, topics):
            subscribers.setdefault(topic_id, []).append(index)
    for topic_id in subscribed_set:
        _one_topic(b, topic_id, target_by_topic[topic_id], subscribers[topic_id], n, subscribed_set)
    return b.result()


def _one_topic(b: _Builder, topic_id: uuid.UUID, targets: list[int], subscribed: list[int], n: int,
               subscribed_set: HashTable) -> None:
    """SimpleHeterogeneousAssignmentBuilder's per-topic builder."""
    sharing = _sharing(len(subscribed), len(targets))
    counts = [0] * n
    for i, c in enumerate(_desired_counts(sharing, len(targets), len(subscribed))):
        counts[subscribed[i]] = c
    by_partition = HashTable(jo.int_hash, _sizing(len(targets)))
    by_member = HashTable(jo.int_hash, _sizing(len(subscribed)))
    for index in range(n):
        old = b.old[index]
        if not len(old):
            continue
        partitions = old.get(topic_id)
        if partitions is not None:
            if topic_id in subscribed_set:
                for p in partitions:
                    by_partition.compute_if_absent(p, lambda: HashTable(jo.int_hash)).add(index)
                    by_member.compute_if_absent(index, lambda: HashTable(jo.int_hash)).add(p)
            else:
                b.new[index] = _deep_copy(old)
                b.new[index].remove(topic_id)
    for index, held in list(by_member.items()):
        while len(held) > counts[index]:
            p = next(iter(held))
            by_partition.get(p).remove(index)
            held.remove(p)
            b.new_assignment(index).get(topic_id).remove(p)
    for p, holders in list(by_partition.items()):
        count = len(holders)
        if count > sharing:
            for index in list(holders):
                partitions = b.new_assignment(index).get(topic_id)
                if partitions is not None and partitions.remove(p):
                    count -= 1
                    holders.remove(index)
                    by_member.get(index).remove(p)
                if count <= sharing:
                    break
    for p in targets:
        by_partition.compute_if_absent(p, lambda: HashTable(jo.int_hash, _sizing(len(subscribed))))
    unfilled = HashTable(jo.int_hash, _sizing(n))
    for index in subscribed:
        held = by_member.get(index)
        if (0 if held is None else len(held)) < counts[index]:
            unfilled.add(index)
    _fill(by_partition, unfilled, sharing, counts, by_member,
          lambda index, p: b.new_assignment(index).compute_if_absent(
              topic_id, lambda: HashTable(jo.int_hash)).add(p))


def assign(members: Mapping[str, MemberSpec], topics: Mapping[uuid.UUID, TopicSpec],
           assignable: Callable[[uuid.UUID, int], bool] = lambda topic_id, partition: True
           ) -> dict[str, Assignment]:
    """The new target assignment of every member; ``assignable``: whether a partition may be
    assigned yet (Kafka assigns a share partition once its share state is initialized)."""
    if not members:
        return {}
    subscriptions = {m.subscribed_topic_ids for m in members.values()}
    build = _homogeneous if len(subscriptions) == 1 else _heterogeneous
    return build(members, topics, assignable)
