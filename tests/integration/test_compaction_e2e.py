"""Compacted topics through real clients and a real ``groupbroker serve``, killed mid-cleaning.

The topics are compacted by the broker default ``log.cleanup.policy=compact`` (Kafka's broker
setting for a topic's ``cleanup.policy``): per-topic configs in CreateTopics come separately.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidRecordError

from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")

TOPIC = "changelog"
CLEANING = r"changelog-0: cleaning from first dirty offset"
CLEANED = r"changelog-0: cleaned \d+ group"


def read_kafka_python(bootstrap: str) -> list[tuple[int, bytes, bytes | None]]:
    """(offset, key, value) of every record of partition 0, from the beginning to the end."""
    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        rows = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, f"stuck at {consumer.position(tp)} of {end}"
            for batch in consumer.poll(timeout_ms=500).values():
                rows.extend((r.offset, r.key, r.value) for r in batch)
        return rows
    finally:
        consumer.close()


class FetchSizeGrowth(logging.Handler):
    """librdkafka's debug lines saying an answer held no whole record: it then doubles its
    fetch size, and after ten such answers fails with MSG_SIZE_TOO_LARGE."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "Increasing max fetch bytes" in record.getMessage():
            self.lines.append(record.getMessage())


def read_librdkafka(bootstrap: str) -> list[tuple[int, bytes, bytes | None]]:
    """Every record of partition 0; fails if any answer held only empty batches (compaction
    leaves them) and so made librdkafka take a record for too large."""
    growth = FetchSizeGrowth()
    logger = logging.getLogger(f"librdkafka.{id(growth)}")
    logger.addHandler(growth)
    logger.setLevel(logging.DEBUG)
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "debug": "fetch",
                            "enable.auto.commit": False, "enable.partition.eof": True},
                           logger=logger)
    try:
        consumer.assign([ck.TopicPartition(TOPIC, 0, ck.OFFSET_BEGINNING)])
        rows, deadline = [], time.monotonic() + 30
        while True:
            assert time.monotonic() < deadline, "librdkafka never reached the end"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
                assert not growth.lines, growth.lines[:3]
                return rows
            rows.append((msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()


def latest(rows) -> dict:
    return {key: (offset, value) for offset, key, value in rows}


def compacted_broker(start_broker, **overrides):
    """Small segments, and any dirty segment worth cleaning (Kafka's default ratio 0.5 would
    leave the last few dirty segments for later)."""
    return start_broker({"log.cleanup.policy": "compact", "log.segment.bytes": 1024,
                         "log.cleaner.backoff.ms": 50, "log.cleaner.min.cleanable.ratio": 0.01,
                         **overrides})


def produce_rounds(producer, rounds: int, keys: int, tombstones: set) -> dict:
    """Round r gives key k the value b'k-r' (None for (r, k) in ``tombstones``), one record
    per batch; returns key -> (offset, value) of the last of each."""
    expected = {}
    for r in range(rounds):
        for k in range(keys):
            key = b"key-%d" % k
            value = None if (r, k) in tombstones else b"%d-%d" % (k, r) + b"." * 40
            expected[key] = (producer.send(TOPIC, key=key, value=value).get(10).offset, value)
    return expected


def test_a_consumer_from_the_beginning_reads_exactly_the_latest_value_per_key(start_broker):
    broker = compacted_broker(start_broker)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    expected = produce_rounds(producer, 6, 20, tombstones={(5, 0), (5, 5), (5, 10)})
    keyless = KafkaProducer(bootstrap_servers=broker.bootstrap)    # kafka-python's idempotent
    with pytest.raises(InvalidRecordError, match="without key"):   # producer stops after this
        keyless.send(TOPIC, value=b"no key").get(10)
    keyless.close()
    # A record larger than a segment rolls the log: everything before it becomes cleanable.
    expected[b"end"] = (producer.send(TOPIC, key=b"end", value=b"e" * 2000).get(10).offset, b"e" * 2000)
    producer.close()
    wait_until(lambda: len(read_kafka_python(broker.bootstrap)) == len(expected), 30,
               "compaction down to one record per key")
    for read in (read_kafka_python, read_librdkafka):
        rows = read(broker.bootstrap)
        assert len(rows) == len(expected), read.__name__            # exactly one per key
        assert latest(rows) == expected, read.__name__               # original offsets
        assert [o for o, *_ in rows] == sorted(o for o, _ in expected.values())
    assert [v for _, v in expected.values()].count(None) == 3      # tombstones still due


def test_tombstones_disappear_after_delete_retention_on_a_later_cleaning(start_broker):
    broker = compacted_broker(start_broker, **{"log.cleaner.delete.retention.ms": 0})
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    expected = produce_rounds(producer, 4, 10, tombstones={(3, 2), (3, 7)})

    def tombstones_gone() -> bool:
        producer.send(TOPIC, key=b"end", value=b"e" * 2000).get(10)     # rolls: more to clean
        return {k for _, k, _ in read_kafka_python(broker.bootstrap)} == \
            {k for k, (_, v) in expected.items() if v is not None} | {b"end"}

    wait_until(tombstones_gone, 30, "the tombstones to be removed")
    producer.close()
    rows = read_librdkafka(broker.bootstrap)
    assert {k: v for k, v in latest(rows).items() if k != b"end"} == \
        {k: v for k, v in expected.items() if v[1] is not None}


def test_kill_9_during_compaction_of_a_large_partition_loses_nothing(start_broker):
    # Records written with the cleaner off leave a long dirty section: the first cleaning
    # after the next start takes long enough to be killed in the middle (a kill may land
    # while cleaned files are written, after some became swap files, or during the swap).
    broker = start_broker({"log.cleanup.policy": "compact", "log.segment.bytes": 256 * 1024,
                           "log.cleaner.backoff.ms": 50, "log.cleaner.enable": "false"})
    expected: dict = {}
    produced: set = set()

    def produce(count: int, start: int) -> None:
        failed = []

        def report(err, msg):
            if err is not None:
                failed.append(err)
            else:
                expected[msg.key()] = (msg.offset(), msg.value())
                produced.add((msg.offset(), msg.key(), msg.value()))

        producer = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20,
                                "compression.type": "lz4", "enable.idempotence": True})
        for i in range(start, start + count):
            value = b"%d:" % i + os.urandom(40).hex().encode()     # lz4 cannot shrink it much
            producer.produce(TOPIC, key=b"key-%d" % (i % 500), value=value, on_delivery=report)
            producer.poll(0)
        assert producer.flush(60) == 0 and not failed, failed[:3]

    killed_mid_cleaning = 0
    for round_ in range(4):                # each round: 30k more records, then a cleaning killed
        broker.overrides["log.cleaner.enable"] = "false"
        if round_:
            broker.start(broker.port)
        produce(30_000, round_ * 30_000)
        assert broker.stop() == 0
        broker.overrides["log.cleaner.enable"] = "true"
        broker.start(broker.port, loaded=False)      # the cleaning starts at once: no waiting
        started = broker.wait_for_log(CLEANING, 60, text=broker.log_since_start)
        time.sleep(random.uniform(0, 0.3) if round_ else 0)
        broker.kill()
        killed_mid_cleaning += not re.search(CLEANED, broker.log_since_start()[started.start():])
    assert killed_mid_cleaning, "no kill landed while a cleaning was running"
    broker.start(broker.port)                  # and a clean stop in the middle of a cleaning
    started = broker.wait_for_log(CLEANING, 60, text=broker.log_since_start)
    assert broker.stop() == 0
    if not re.search(CLEANED, broker.log_since_start()[started.start():]):
        assert "changelog-0: cleaning abandoned: the broker is stopping" in broker.log_since_start()
    broker.start(broker.port)
    produce(20_000, 120_000)
    broker.wait_for_log(CLEANED, 60, text=broker.log_since_start)
    rows = read_librdkafka(broker.bootstrap)         # lz4: kafka-python here has no codec for it
    assert latest(rows) == expected                  # every key's latest value, at its offset
    assert set(rows) <= produced                     # nothing invented, nothing moved
    assert len(rows) < len(produced) // 2            # and compaction did happen
