"""Group -> shard routing matches Kafka's __consumer_offsets partitioning (known vectors)."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator import routing
from coordinator.routing import java_string_hash, kafka_abs, shard_for

VECTORS = [
    ("mykafka-group_4", -1893352287, 37),
    ("test-group", 627841412, 12),
    ("", 0, 0),
    ("consumer-group-1", 147483020, 20),
    ("gruppe-üöä", -1284525800, 0),
    ("group-😀", 508083057, 7),
    ("polygenelubricants", -2147483648, 0),
]


@pytest.mark.parametrize(("group", "java_hash", "shard"), VECTORS)
def test_seed_vectors(group, java_hash, shard):
    assert java_string_hash(group) == java_hash
    assert shard_for(group) == shard


def test_abs_of_min_value_is_zero():
    assert kafka_abs(-2147483648) == 0
    assert kafka_abs(-5) == 5


def test_astral_characters_count_as_two_code_units():
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16.
    assert java_string_hash("😀") == 31 * 0xD83D + 0xDE00


def test_routing_is_stable_across_processes():
    """A fresh interpreter with another hash seed routes the same way (no use of hash())."""
    code = "from coordinator.routing import shard_for; print(shard_for('mykafka-group_4'))"
    for seed in ("1", "12345"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": seed, "PYTHONPATH": "."})
        assert out.stdout.strip() == "37"


def slow_java_string_hash(text: str) -> int:
    """The definition, one UTF-16 code unit at a time: the reference for the fast one."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
       | st.text(max_size=40).map(lambda s: s * 100))        # spans several chunks
def test_fast_hash_matches_the_definition(text):
    assert java_string_hash(text) == slow_java_string_hash(text)


@pytest.mark.parametrize("length", [1023, 1024, 1025, 2048, 5000])
def test_fast_hash_at_chunk_boundaries(length):
    text = "".join(chr(0x21 + i % 0xD700) for i in range(length))
    assert java_string_hash(text) == slow_java_string_hash(text)


def test_the_cache_stays_bounded_and_keeps_no_long_ids():
    for i in range(routing.CACHE_ENTRIES + 100):
        shard_for(f"group-{i}")
    assert len(routing._cache) <= routing.CACHE_ENTRIES
    long_id = "x" * (routing.CACHED_ID_CHARS + 1)
    assert shard_for(long_id) == kafka_abs(slow_java_string_hash(long_id)) % 50
    assert all(len(group) <= routing.CACHED_ID_CHARS for group, _ in routing._cache)
