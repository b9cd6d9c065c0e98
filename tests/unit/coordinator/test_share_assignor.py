"""Kafka's simple share-group assignor, reproduced in coordinator/share/assignor.py: its balance,
sharing and stickiness, and the Java hash-table order it runs over."""

import uuid

import pytest

from coordinator.consumer.assignors.spec import MemberSpec, TopicSpec
from coordinator.java_order import HashTable
from coordinator.share.assignor import assign

A, B = uuid.UUID(int=0x1111_2222_3333_4444_5555_6666_7777_8888), uuid.UUID(int=0x9999_AAAA_BBBB_CCCC_DDDD_EEEE_FFFF_0001)
TOPICS = {A: TopicSpec("a", 6), B: TopicSpec("b", 2)}


def members(ids, topics=(A,), assigned=None):
    assigned = assigned or {}
    return {m: MemberSpec(None, None, frozenset(topics), assigned.get(m, {})) for m in ids}


def holders(result, topic=A):
    out = {}
    for member, parts in result.items():
        for p in parts.get(topic, ()):
            out.setdefault(p, set()).add(member)
    return out


def test_a_hash_table_iterates_as_javas():
    table = HashTable(lambda i: i, 5)              # new HashMap<>(5): 8 buckets
    for key in (20, 3, 1, 9):
        table.put(key)
    assert list(table) == [1, 9, 3, 20] and table.capacity == 8
    table.compute_if_absent(17, lambda: None)       # bucket 1 again, linked at the head
    assert list(table) == [17, 1, 9, 3, 20]
    for key in range(100, 103):
        table.put(key)                                # a 7th entry grows it to 16 buckets
    assert table.capacity == 16


@pytest.mark.parametrize("count", [1, 2, 3, 4, 6])
def test_fewer_members_than_partitions_split_them(count):
    result = assign(members([f"member-{i}" for i in range(count)]), {A: TOPICS[A]})
    assert all(len(h) == 1 for h in holders(result).values()) and len(holders(result)) == 6
    sizes = sorted(len(parts.get(A, ())) for parts in result.values())
    assert sizes[-1] - sizes[0] <= 1


def test_more_members_than_partitions_share_them():
    result = assign(members([f"member-{i}" for i in range(5)]), {B: TOPICS[B]} | {}, ) if False else \
        assign(members([f"member-{i}" for i in range(5)], topics=(B,)), {B: TOPICS[B]})
    shared = holders(result, B)
    assert set(shared) == {0, 1} and all(len(h) == 3 for h in shared.values())
    assert all(parts.get(B) for parts in result.values())          # every member gets one


def test_a_new_member_takes_from_the_others_who_keep_the_rest():
    first = assign(members(["m1", "m2"]), {A: TOPICS[A]})
    after = assign(members(["m1", "m2", "m3"], assigned=first), {A: TOPICS[A]})
    for member in ("m1", "m2"):
        assert after[member][A] <= first[member][A]
    assert len(holders(after)) == 6 and sorted(len(p[A]) for p in after.values()) == [2, 2, 2]


def test_only_assignable_partitions_are_assigned():
    result = assign(members(["m1", "m2"]), {A: TOPICS[A]}, lambda topic, partition: partition < 3)
    assert set(holders(result)) == {0, 1, 2}


def test_members_get_only_the_topics_they_subscribe_to():
    specs = members(["m1"], topics=(A,)) | members(["m2"], topics=(A, B))
    result = assign(specs, TOPICS)
    assert B not in result["m1"] and result["m2"].get(B) == frozenset({0, 1})
    assert len(holders(result)) == 6
