"""Group -> shard routing matches Kafka's __consumer_offsets partitioning (REFERENCE.md §4 vectors)."""

import subprocess
import sys

import pytest

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
