"""Transactions with kafka-python 3.0.12's transactional producer against ``groupbroker serve``:
commits and aborts, read_committed consumers of kafka-python and confluent-kafka agreeing, and
offsets committed inside a transaction (send_offsets_to_transaction with the consumer's group
metadata, KIP-447) visible only once it commits."""

from __future__ import annotations

import time

from tests.support.processes import import_client

kafka = import_client("kafka")
ck = import_client("confluent_kafka")
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition  # noqa: E402

from tests.interop.test_transactions_confluent import read_all  # noqa: E402
from tests.support.confluent import create_topics, produce  # noqa: E402


def kp_read_committed(bootstrap: str, topic: str, partitions: int, expect: int) -> list[bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             fetch_max_wait_ms=100, consumer_timeout_ms=3000)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    values = []
    deadline = time.monotonic() + 15
    try:
        while len(values) < expect and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                values += [r.value for r in records]
    finally:
        consumer.close()
    return values


def test_kafka_python_commits_and_aborts_and_both_libraries_agree(broker):
    create_topics(broker.bootstrap, ("kp-tx", 2))
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-tx-1")
    producer.init_transactions()
    for round_, commit in enumerate([True, False, True, False]):
        producer.begin_transaction()
        for i in range(4):
            producer.send("kp-tx", value=b"kp%d-%d" % (round_, i), partition=i % 2)
        if commit:
            producer.commit_transaction()
        else:
            producer.flush()
            producer.abort_transaction()
    producer.close()
    wanted = sorted(b"kp%d-%d" % (r, i) for r in (0, 2) for i in range(4))
    assert sorted(kp_read_committed(broker.bootstrap, "kp-tx", 2, len(wanted) + 1)) == wanted
    assert sorted(read_all(broker.bootstrap, "kp-tx", 2, "read_committed", expect=len(wanted))) == wanted


def test_offsets_sent_to_a_transaction_are_committed_with_it(broker):
    create_topics(broker.bootstrap, ("kp-in", 1), ("kp-out", 1))
    produce(broker.bootstrap, "kp-in", 10, 1)
    consumer = KafkaConsumer("kp-in", bootstrap_servers=broker.bootstrap, group_id="kp-eos",
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             isolation_level="read_committed", fetch_max_wait_ms=100)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-eos-1")
    producer.init_transactions()
    try:
        records = []
        deadline = time.monotonic() + 20
        while len(records) < 10 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=200).values():
                records += batch
        assert len(records) == 10
        tp = TopicPartition("kp-in", 0)
        for commit, offset in ((False, 4), (True, 10)):
            producer.begin_transaction()
            producer.send("kp-out", value=b"x")
            producer.send_offsets_to_transaction({tp: OffsetAndMetadata(offset, "", -1)},
                                                 consumer.group_metadata())
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
            committed = consumer.committed(tp)
            assert committed == (10 if commit else None), (commit, committed)
    finally:
        producer.close()
        consumer.close()
