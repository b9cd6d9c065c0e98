"""Which coordinator shard owns a group, computed exactly as Kafka picks the __consumer_offsets partition.

Kafka: ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, where
``String.hashCode`` runs over UTF-16 code units and ``Utils.abs`` maps
Integer.MIN_VALUE to 0. Python's built-in string hash is salted per process and must never
be used for this.
"""

from __future__ import annotations

from functools import lru_cache

DEFAULT_SHARDS = 50


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: 31-based polynomial over UTF-16 code units, as signed int32."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: like ``abs`` except that Integer.MIN_VALUE gives 0."""
    return 0 if n == -0x80000000 else abs(n)


@lru_cache(maxsize=1 << 16)
def shard_for(group_id: str, shards: int = DEFAULT_SHARDS) -> int:
    """Cached: every group request routes by it, and group ids repeat."""
    return kafka_abs(java_string_hash(group_id)) % shards
