"""Which coordinator shard owns a group, computed exactly as Kafka picks the __consumer_offsets partition.

Kafka: ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, where
``String.hashCode`` runs over UTF-16 code units and ``Utils.abs`` maps
Integer.MIN_VALUE to 0. Python's built-in string hash is salted per process and must never
be used for this.

Group ids come from clients, so neither the hash nor the cache may cost more than the
request that carries the id: the polynomial is evaluated a chunk at a time by C-level
loops, and only short ids are cached, in a small LRU.
"""

from __future__ import annotations

import sys
from array import array
from operator import mul

DEFAULT_SHARDS = 50

_MASK = 0xFFFFFFFF
_CHUNK = 1024
#: 31**(_CHUNK-1), ..., 31**1, 31**0, mod 2**32: the weights of one chunk's code units
_POWERS = [pow(31, e, 1 << 32) for e in range(_CHUNK - 1, -1, -1)]
_SHIFT = pow(31, _CHUNK, 1 << 32)              # moves a hash past a whole chunk
_NATIVE_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"

CACHE_ENTRIES = 4096
CACHED_ID_CHARS = 256


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: 31-based polynomial over UTF-16 code units, as signed int32.

    ``h = sum(unit[i] * 31**(n-1-i))`` mod 2**32, summed per chunk with ``map(mul)`` (no
    Python-level loop per character) and chunks combined Horner-style.
    """
    units = array("H", text.encode(_NATIVE_UTF16, "surrogatepass"))
    n = len(units)
    head = n % _CHUNK                         # the short first chunk aligns the rest
    h = sum(map(mul, units[:head], _POWERS[_CHUNK - head:])) & _MASK
    for start in range(head, n, _CHUNK):
        h = (h * _SHIFT + sum(map(mul, units[start:start + _CHUNK], _POWERS))) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: like ``abs`` except that Integer.MIN_VALUE gives 0."""
    return 0 if n == -0x80000000 else abs(n)


_cache: dict[tuple[str, int], int] = {}


def shard_for(group_id: str, shards: int = DEFAULT_SHARDS) -> int:
    """Cached for short ids (every group request routes by it, and group ids repeat; a full
    cache starts over); a long id is hashed each time rather than kept alive by the cache."""
    shard = _cache.get((group_id, shards))
    if shard is None:
        shard = kafka_abs(java_string_hash(group_id)) % shards
        if len(group_id) <= CACHED_ID_CHARS:
            if len(_cache) >= CACHE_ENTRIES:
                _cache.clear()
            _cache[group_id, shards] = shard
    return shard



def group_per_shard(prefix: str, shards: int = DEFAULT_SHARDS) -> list[str]:
    """A group id on each shard, shard 0 first (``prefix-N`` for the first N that lands there):
    what reaches every shard (or ``__consumer_offsets`` partition) once."""
    found: dict[int, str] = {}
    n = 0
    while len(found) < shards:
        found.setdefault(shard_for(f"{prefix}-{n}", shards), f"{prefix}-{n}")
        n += 1
    return [found[s] for s in range(shards)]
