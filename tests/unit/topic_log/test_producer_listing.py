"""What DescribeProducers shows of a partition's producers, as kafka-transactions
describe-producers prints it (tests/interop/test_kafka_cli_tools.py compares it with Kafka):
each producer's last timestamp, a marker's included, and Kafka's order of producers."""

from __future__ import annotations

from coordinator.java_order import long_map_order
from topic_log import PartitionLog
from tests.unit.topic_log.test_producer import _txn_batch, idem


def test_a_marker_is_its_producers_last_timestamp_and_survives_reopening(tmp_path):
    plog = PartitionLog(tmp_path / "t-0")
    plog.append(_txn_batch(1, 0, b"a"), 0)                 # the record's timestamp: 1
    plog.append(idem([b"plain"], 0, pid=9, timestamp=700), 0)
    assert plog.producers.entry(1).last_timestamp == 1
    plog.write_marker(1, 0, True, 0, 5_000)               # Kafka's lastTimestamp is the marker's
    assert plog.producers.entry(1).last_timestamp == 5_000
    assert plog.producers.entry(9).last_timestamp == 700
    plog.close()
    again = PartitionLog(tmp_path / "t-0")
    assert again.producers.entry(1).last_timestamp == 5_000


def test_producers_are_listed_in_the_order_of_a_java_hash_map_of_their_ids():
    assert long_map_order([15, 16]) == [16, 15]           # buckets 15 and 0 of 16
    assert long_map_order([3, 1, 2]) == [1, 2, 3]
    assert long_map_order([1 << 32, 1]) == [1 << 32, 1]   # Long.hashCode folds the high half: both in bucket 1
    assert long_map_order(list(range(13, 0, -1))) == list(range(1, 14))      # grown to 32 buckets
