"""A broker killed with SIGKILL in the middle of transactions, then restarted on its data dir.

No read_committed reader ever sees part of a transaction, and the offsets committed inside
transactions are intact: a transaction open at the kill (after AddPartitions, before EndTxn)
is aborted by its timeout after the restart, and one killed between EndTxn and its markers
(held there by the ``hold-markers`` fault) is completed by the restarted coordinator, as a new
Kafka coordinator completes it.
"""

from __future__ import annotations

import re

import pytest

from broker.cli.faults import AdminClient, read_token
from tests.interop.test_transactions_confluent import read_all, transactional
from tests.support.confluent import create_topics, produce
from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")

SETTINGS = {"group.initial.rebalance.delay.ms": 0, "groupbroker.admin.port": 0,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": 200}


def committed(bootstrap: str, group: str, topic: str, partitions: int, timeout: float = 10) -> list[int]:
    """The group's committed offsets as librdkafka fetches them: with require_stable, so it
    retries while a transaction's offsets are pending (UNSTABLE_OFFSET_COMMIT)."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return [tp.offset for tp in consumer.committed(
            [ck.TopicPartition(topic, p) for p in range(partitions)], timeout)]
    finally:
        consumer.close()


def admin(broker) -> AdminClient:
    address = re.search(r"admin endpoint listening on (\S+)", broker.log_text()).group(1)
    return AdminClient(address, read_token(str(broker.data_dir / "admin.token")))


def offsets_in_transaction(producer, group: str, topic: str, offsets: list[int]) -> None:
    metadata = ck.Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": group}).consumer_group_metadata()
    producer.send_offsets_to_transaction([ck.TopicPartition(topic, p, o) for p, o in enumerate(offsets)],
                                         metadata, 15)


def test_kill_between_add_partitions_and_end_txn(start_broker):
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("crash-out", 2), ("crash-in", 2))
    producer = transactional(broker.bootstrap, "crash-a", **{"transaction.timeout.ms": 3000})
    producer.begin_transaction()                                  # committed before the kill
    for i in range(4):
        producer.produce("crash-out", value=b"kept-%d" % i, partition=i % 2)
    offsets_in_transaction(producer, "crash-g", "crash-in", [5, 7])
    producer.commit_transaction(15)
    producer.begin_transaction()                                  # open at the kill
    for i in range(4):
        producer.produce("crash-out", value=b"lost-%d" % i, partition=i % 2)
    offsets_in_transaction(producer, "crash-g", "crash-in", [50, 70])
    producer.flush(15)
    broker.kill()
    broker.start(broker.port)
    # the open transaction holds read_committed readers until its timeout aborts it
    values = wait_until(lambda: (v := read_all(broker.bootstrap, "crash-out", 2, "read_committed",
                                               expect=4, seconds=3)) and len(v) == 4 and v,
                        30, "the committed transaction, once the open one is aborted")
    assert sorted(values) == [b"kept-%d" % i for i in range(4)]
    assert committed(broker.bootstrap, "crash-g", "crash-in", 2) == [5, 7]
    assert "transaction of producer" in broker.log_text() and "aborting it" in broker.log_text()
    successor = transactional(broker.bootstrap, "crash-a")         # the id is usable again
    successor.begin_transaction()
    successor.produce("crash-out", value=b"after", partition=0)
    successor.commit_transaction(15)
    assert len(read_all(broker.bootstrap, "crash-out", 2, "read_committed", expect=5)) == 5


def test_kill_between_end_txn_and_its_markers(start_broker):
    broker = start_broker(SETTINGS)
    create_topics(broker.bootstrap, ("held-out", 2), ("held-in", 2))
    produce(broker.bootstrap, "held-in", 2, 2)
    client = admin(broker)
    producer = transactional(broker.bootstrap, "crash-b")
    producer.begin_transaction()
    for i in range(6):
        producer.produce("held-out", value=b"v%d" % i, partition=i % 2)
    offsets_in_transaction(producer, "held-g", "held-in", [1, 1])
    client.call("hold-markers", {"on": True})
    producer.commit_transaction(15)                  # answered once PrepareCommit is written
    assert read_all(broker.bootstrap, "held-out", 2, "read_committed", seconds=2) == []
    with pytest.raises(ck.KafkaException, match="Timed out"):      # pending: UNSTABLE_OFFSET_COMMIT
        committed(broker.bootstrap, "held-g", "held-in", 2, timeout=2)
    client.close()
    broker.kill()
    broker.start(broker.port)
    values = read_all(broker.bootstrap, "held-out", 2, "read_committed", expect=6)
    assert sorted(values) == [b"v%d" % i for i in range(6)]
    assert committed(broker.bootstrap, "held-g", "held-in", 2) == [1, 1]
