"""confluent-kafka helpers the interop tests share: topics, records, polling, client logs."""

from __future__ import annotations

import logging
import threading
import time

from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def create_topics(bootstrap: str, *topics: tuple[str, int]) -> None:
    """Create (name, partitions) topics and wait for each."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, n, 1) for name, n in topics], operation_timeout=10)
    for future in futures.values():
        future.result(15)


def produce(bootstrap: str, topic: str, count: int, partitions: int,
            start: int = 0) -> set[tuple[str, int, int]]:
    """``count`` keyed records spread evenly over the partitions, idempotently; the
    (topic, partition, offset) of each."""
    delivered, failed = set(), []

    def report(err, msg):
        if err is not None:
            failed.append(err)
        else:
            delivered.add((msg.topic(), msg.partition(), msg.offset()))

    producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                            "enable.idempotence": True})
    for i in range(start, start + count):
        producer.produce(topic, key=b"k%d" % i, value=b"m%d" % i, partition=i % partitions,
                         on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0, "records still undelivered after 30 s"
    assert not failed, f"delivery failed: {failed[:3]}"
    assert len(delivered) == count
    return delivered


def poll_all(members, seconds: float) -> None:
    """Poll every member in turn for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in members:
            m.poll()


class LogLines(logging.Handler):
    """Collects a client's log messages (librdkafka's debug lines through ``logger``)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def holding(consumer, count: int):
    """A predicate for wait_until: poll ``consumer`` once; does it hold ``count`` partitions?"""
    def holds() -> bool:
        consumer.poll(0.1)
        return len(consumer.assignment()) == count
    return holds


def consumer_protocol_member(bootstrap: str, group: str, subscription: list[str], client_id: str,
                             partitions: int):
    """A confluent-kafka member with group.protocol=consumer, polled until it holds
    ``partitions`` partitions of its ``subscription`` (names or ^regexes)."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                            "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    consumer.subscribe(subscription)
    try:
        wait_until(holding(consumer, partitions), 20, f"{client_id}'s assignment")
    except BaseException:
        consumer.close()
        raise
    return consumer


def closed_within(consumer, seconds: float) -> None:
    """Close a confluent-kafka consumer, failing the test if ``close()`` has not returned within
    ``seconds``: librdkafka's close has no timeout, and a hang there would stall the whole run.
    A hung close is left behind in its daemon thread."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (consumer.close(), done.set()), daemon=True)
    thread.start()
    assert done.wait(seconds), f"the consumer's close() did not return within {seconds}s"
