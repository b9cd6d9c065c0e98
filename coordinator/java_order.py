"""The iteration orders of Java hash collections that Kafka's answers inherit.

Where Kafka builds an answer by walking a ``HashMap`` or ``HashSet``, the order clients see is the
table's: entries by bucket (the key's hash, spread by ``h ^ (h >>> 16)``, masked by the table
size), and within a bucket by when they were linked in. These functions give those orders for
the collections whose order reaches the wire, so that our answers list things as Kafka's do.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, TypeVar

from .routing import java_string_hash

K = TypeVar("K", bound=Hashable)
_MASK = 0xFFFFFFFF
_LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = 16


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode()``."""
    return (31 * (31 + partition) + java_string_hash(topic)) & _MASK


def string_hash(text: str) -> int:
    return java_string_hash(text) & _MASK


def long_hash(value: int) -> int:
    """``Long.hashCode()``."""
    value &= 0xFFFFFFFFFFFFFFFF
    return (value ^ (value >> 32)) & _MASK


def long_map_order(keys: list[int]) -> list[int]:
    """The order a ``HashMap<Long, ...>`` filled with ``keys`` by ``put`` (in this order)
    iterates them."""
    return iteration_order(keys, long_hash, grown_capacity(len(keys)))


def table_size_for(wanted: int) -> int:
    """Java's ``HashMap.tableSizeFor``: the smallest power of two not below ``wanted``."""
    return 1 << max(wanted - 1, 0).bit_length()


def copy_capacity(size: int) -> int:
    """The table of ``new HashSet<>(collection)`` (or ``new HashMap<>(map)``) of ``size`` entries."""
    return table_size_for(max(int(size / _LOAD_FACTOR) + 1, _DEFAULT_CAPACITY))


def grown_capacity(size: int, capacity: int = _DEFAULT_CAPACITY) -> int:
    """The table after ``put``s have brought it to ``size`` entries (it doubles once an insert
    takes it past three quarters)."""
    while size > capacity * _LOAD_FACTOR:
        capacity *= 2
    return capacity


def concurrent_capacity(size: int) -> int:
    """The table of a ``ConcurrentHashMap`` that puts have brought to ``size`` entries (it
    doubles once an insert brings it to three quarters, one entry sooner than a HashMap)."""
    capacity = _DEFAULT_CAPACITY
    while size >= capacity * _LOAD_FACTOR:
        capacity *= 2
    return capacity


def iteration_order(keys: Iterable[K], hash_of: Callable[[K], int], capacity: int,
                    newest_first: bool = False) -> list[K]:
    """``keys`` (distinct, in the order they were linked into the table) in the table's order.
    ``newest_first``: each new entry went to the head of its bucket (``computeIfAbsent``), not
    its tail (``put``, ``add``); growing the table keeps the order within a bucket either way."""
    def bucket(key: K) -> int:
        h = hash_of(key)
        return (h ^ (h >> 16)) & (capacity - 1)
    ranked = [(bucket(key), -i if newest_first else i, key) for i, key in enumerate(keys)]
    return [key for _, _, key in sorted(ranked, key=lambda r: r[:2])]


def shard_order(shards: list[int], topic: str = "__consumer_offsets") -> list[int]:
    """The distinct ``shards`` in the order Kafka's group coordinator answers a request that names
    several groups (DescribeGroups, DeleteGroups, ConsumerGroupDescribe): it files the groups
    under their partition in a ``HashMap<TopicPartition, ...>`` with ``computeIfAbsent``, in
    request order, and answers partition by partition in that map's order. computeIfAbsent
    grows the table before an insert, once the entries already exceed three quarters of it."""
    capacity, order = _DEFAULT_CAPACITY, []
    for shard in shards:
        if len(order) > capacity * _LOAD_FACTOR:
            capacity *= 2
        if shard not in order:
            order.append(shard)
    return iteration_order(order, lambda shard: topic_partition_hash(topic, shard), capacity, newest_first=True)


def hash_set_order(names: list[str]) -> list[str]:
    """The distinct ``names`` in the order of ``new HashSet<>(names)``: the order Kafka's
    coordinator deletes one partition's groups in, hence DeleteGroups' answer."""
    distinct = list(dict.fromkeys(names))
    return iteration_order(distinct, string_hash, copy_capacity(len(distinct)))


def transaction_partitions_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """A transaction's partitions as Kafka's transaction metadata iterates them: a
    ``HashSet<TopicPartition>`` copied and extended at each AddPartitionsToTxn (DescribeTransactions
    lists topics and partitions in this order). Partitions that share a bucket keep the order
    given (Kafka's: the order they were added in, which the metadata does not keep)."""
    return iteration_order(partitions, lambda tp: topic_partition_hash(*tp),
                           grown_capacity(len(partitions), copy_capacity(0)))


def hash_map_order(keys: list[str]) -> list[str]:
    """The order a ``HashMap<String, ...>`` filled with ``keys`` by ``put`` (in this order)
    iterates them."""
    return iteration_order(keys, string_hash, grown_capacity(len(keys)))


class HashTable:
    """A ``java.util.HashMap`` (or ``HashSet``: values None) that iterates its keys in Java's
    order while it is changed: by bucket, and within a bucket ``put`` links a key at the tail,
    ``computeIfAbsent`` at the head; the table grows as Java's does (``put`` after an insert
    takes it past its threshold, ``computeIfAbsent`` before an insert into a full table).
    ``requested``: the initial capacity passed to Java's constructor (None: the default 16).
    Where an algorithm's result depends on hash order (Kafka's share-group assignor), running
    it over these tables gives Kafka's result."""

    def __init__(self, hash_of: Callable, requested: int | None = None, keys: Iterable = ()):
        self._hash_of, self._requested = hash_of, requested
        self.capacity = self._threshold = 0
        self._values: dict = {}
        self._rank: dict = {}
        self._linked = 0
        for key in keys:
            self.put(key)

    @classmethod
    def copy_of(cls, hash_of: Callable, keys: list) -> HashTable:
        """``new HashSet<>(collection)`` of ``keys`` (in the collection's order)."""
        return cls(hash_of, max(int(len(keys) / _LOAD_FACTOR) + 1, _DEFAULT_CAPACITY), keys)

    def _resize(self) -> None:
        if self.capacity == 0:
            self.capacity = _DEFAULT_CAPACITY if self._requested is None else table_size_for(
                max(self._requested, 1))
        else:
            self.capacity *= 2
        self._threshold = int(self.capacity * _LOAD_FACTOR)

    def _link(self, key, value, head: bool) -> None:
        self._linked += 1
        self._rank[key] = -self._linked if head else self._linked
        self._values[key] = value

    def put(self, key, value=None) -> None:
        if key in self._values:
            self._values[key] = value
            return
        if self.capacity == 0:
            self._resize()
        self._link(key, value, head=False)
        if len(self._values) > self._threshold:
            self._resize()

    add = put

    def compute_if_absent(self, key, make: Callable):
        if key not in self._values:
            if self.capacity == 0 or len(self._values) > self._threshold:
                self._resize()
            self._link(key, make(), head=True)
        return self._values[key]

    def remove(self, key) -> bool:
        if key not in self._values:
            return False
        del self._values[key], self._rank[key]
        return True

    def get(self, key, default=None):
        return self._values.get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self):
        """The keys in Java's order at the time of the call; keys removed meanwhile are skipped
        (as an iterator's own ``remove`` would)."""
        def position(key):
            h = self._hash_of(key)
            return (h ^ (h >> 16)) & (self.capacity - 1), self._rank[key]
        for key in sorted(self._values, key=position):
            if key in self._values:
                yield key

    def items(self):
        for key in self:
            yield key, self._values[key]
