"""confluent-kafka 2.16 (librdkafka 2.16) health checks and regex subscriptions.

librdkafka 2.12-2.16 sends its all-topics Metadata request with three stray bytes after the
last field; Kafka ignores them, so ``list_topics()`` (the usual health check) and every regex
subscription work there. These tests hold us to the same.
"""

from __future__ import annotations

import pytest

from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402


def create_topics(bootstrap: str, *names: str, partitions: int = 2) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(n, partitions, 1) for n in names], operation_timeout=10)
    for future in futures.values():
        future.result(15)


@pytest.mark.parametrize("client", ["admin", "producer", "consumer"])
def test_list_topics_from_every_client(broker, client):
    create_topics(broker.bootstrap, "orders", "payments", partitions=3)
    config = {"bootstrap.servers": broker.bootstrap}
    if client == "admin":
        handle = AdminClient(config)
    elif client == "producer":
        handle = ck.Producer(config)
    else:
        handle = ck.Consumer({**config, "group.id": "health"})
    try:
        metadata = handle.list_topics(timeout=10)
    finally:
        if client == "consumer":
            handle.close()
    assert {"orders", "payments"} <= set(metadata.topics)
    assert len(metadata.topics["orders"].partitions) == 3
    assert [b.port for b in metadata.brokers.values()] == [broker.port]
    assert "malformed" not in broker.log_text()


def test_regex_subscription_picks_up_a_topic_created_later(broker):
    create_topics(broker.bootstrap, "orders-eu", "billing")
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("orders-eu", b"eu")
    producer.produce("billing", b"not matched")
    assert producer.flush(10) == 0
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "regex",
                            "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500,
                            "session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
    seen: list[tuple[str, bytes]] = []

    def poll():
        for m in consumer.consume(100, 0.1):
            assert m.error() is None, m.error()
            seen.append((m.topic(), m.value()))
        return seen

    try:
        consumer.subscribe(["^orders-.*"])
        wait_until(lambda: ("orders-eu", b"eu") in poll(), 20, "the first matching topic's record")
        create_topics(broker.bootstrap, "orders-us")
        producer.produce("orders-us", b"us")
        assert producer.flush(10) == 0
        wait_until(lambda: ("orders-us", b"us") in poll(), 20, "the record of the topic created later")
        assert {t for t, _ in seen} == {"orders-eu", "orders-us"}
    finally:
        consumer.close()
