"""The iteration orders of Java's HashMap and HashSet, and Java's orderings of strings and Uuids.

Kafka's uniform assignor gives different answers for different iteration orders of its maps
and sets, so matching its output means walking ours in the order a ``java.util.HashMap`` would:
by bucket (the key's hash, spread and masked by the table size), and within a bucket in insertion
order, which a resize keeps. Bins of nine or more colliding keys (tree bins) are not modelled.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from coordinator.java_order import copy_capacity, grown_capacity, iteration_order, string_hash

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def hash_order(keys, hash_fn, capacity: int) -> list:
    """``keys`` in the order a Java hash table of ``capacity`` buckets iterates them, assuming
    they were inserted in the order given (:func:`coordinator.java_order.iteration_order`)."""
    return iteration_order(list(keys), hash_fn, capacity)


def uuid_hash(u: uuid.UUID) -> int:
    """Kafka ``Uuid.hashCode()``: the two 32-bit halves of ``msb ^ lsb`` xor-ed together."""
    x = ((u.int >> 64) ^ u.int) & _MASK64
    return ((x >> 32) ^ x) & _MASK32


def int_hash(i: int) -> int:
    """``Integer.hashCode()``."""
    return i & _MASK32


def uuid_key(u: uuid.UUID) -> tuple[int, int]:
    """Sort key of Kafka's ``Uuid.compareTo``: both halves compared as signed 64-bit longs."""
    msb, lsb = u.int >> 64, u.int & _MASK64
    return (msb - (1 << 64) if msb >> 63 else msb, lsb - (1 << 64) if lsb >> 63 else lsb)


def string_key(s: str) -> bytes:
    """Sort key of ``String.compareTo`` (UTF-16 code units, which differs from code points)."""
    return s.encode("utf-16-be", "surrogatepass")


def member_order(member_ids: Iterable[str], count: int) -> list[str]:
    """``GroupSpec.memberIds()``: the key order of the ``HashMap`` Kafka's TargetAssignmentBuilder
    fills with one put per member; colliding ids keep the caller's order."""
    return hash_order(member_ids, string_hash, grown_capacity(count))


def topic_set_order(topic_ids: Iterable[uuid.UUID], count: int) -> list[uuid.UUID]:
    """The order of a ``new HashSet<>(topicIds)``; colliding ids go by ``Uuid.compareTo``, since
    the order Kafka inserted them in (that of its TopicIds view) is not ours to know."""
    return hash_order(sorted(topic_ids, key=uuid_key), uuid_hash, copy_capacity(count))


def partition_order(partitions: Iterable[int], count: int) -> list[int]:
    """The order of a ``new HashSet<>(partitions)``, as Kafka builds a member's partitions when it
    replays a target-assignment record: ascending whenever every partition is below the table
    size (at least 16), which covers all of Kafka's own tests; colliding ones ascending."""
    return hash_order(sorted(partitions), int_hash, copy_capacity(count))


def replayed_order(assignment: dict[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """A member's assignment reordered as Kafka iterates it once the record holding it has been
    replayed (``Collectors.toMap``, a grown ``HashMap``), so that feeding our output back in
    reproduces Kafka's next round; empty topics are dropped, colliding topics keep their order."""
    kept = [t for t, partitions in assignment.items() if partitions]
    return {t: assignment[t] for t in hash_order(kept, uuid_hash, grown_capacity(len(kept)))}
