"""Issue 28: confluent-kafka's ShareConsumer (librdkafka's share consumer) in a share group,
against groupbroker and against Apache Kafka 4.3.1 at once: explicit acknowledgement (release
then accept, reject, a poison record archived at the delivery limit) and the records of a member
that stays silent redelivered after the lock duration; the outcomes compared."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

RECORDS = 12
NAMES = {ck.AcknowledgeType.ACCEPT: "ACCEPT", ck.AcknowledgeType.RELEASE: "RELEASE",
         ck.AcknowledgeType.REJECT: "REJECT"}


def _prepare(bootstrap: str, topic: str, group: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in (("share.auto.offset.reset", "earliest"), ("share.delivery.count.limit", "3"),
                            ("share.record.lock.duration.ms", "2000"))])
    admin.incremental_alter_configs([resource])[resource].result(15)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=b"v%d" % i, key=b"k%d" % i, partition=0)
    assert producer.flush(15) == 0


def _member(bootstrap: str, group: str, topic: str):
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    return consumer


def explicit(bootstrap: str) -> dict:
    topic, group = f"ck-share-{uuid.uuid4().hex[:6]}", f"ck-group-{uuid.uuid4().hex[:6]}"
    _prepare(bootstrap, topic, group)
    consumer = _member(bootstrap, group, topic)
    seen, done, poison = [], set(), 0
    deadline = time.monotonic() + 60
    try:
        while (len(done) < RECORDS or poison < 3) and time.monotonic() < deadline:
            for m in consumer.poll(0.3):
                if m.error():
                    continue
                value, count = m.value().decode(), m.delivery_count()
                if value == "v3":
                    kind = ck.AcknowledgeType.RELEASE if count == 1 else ck.AcknowledgeType.ACCEPT
                elif value == "v5":
                    kind = ck.AcknowledgeType.REJECT
                elif value == "v7":
                    kind, poison = ck.AcknowledgeType.RELEASE, poison + 1
                else:
                    kind = ck.AcknowledgeType.ACCEPT
                consumer.acknowledge(m, kind)
                seen.append((value, count, NAMES[kind]))
                if kind != ck.AcknowledgeType.RELEASE or value == "v7":
                    done.add(value)
            consumer.commit_sync()
        later = [m for m in consumer.poll(2.5) if not m.error()]
        return {"deliveries": sorted(seen), "after": len(later)}
    finally:
        consumer.close()


def silent(bootstrap: str) -> dict:
    topic, group = f"ck-silent-{uuid.uuid4().hex[:6]}", f"ck-group-{uuid.uuid4().hex[:6]}"
    _prepare(bootstrap, topic, group)
    quiet = _member(bootstrap, group, topic)
    first = []
    deadline = time.monotonic() + 60
    while not first and time.monotonic() < deadline:
        first = [(m.value().decode(), m.delivery_count()) for m in quiet.poll(0.3) if not m.error()]
    other = _member(bootstrap, group, topic)
    second = []
    try:
        while len(second) < len(first) and time.monotonic() < deadline:
            for m in other.poll(0.3):
                if not m.error():
                    other.acknowledge(m, ck.AcknowledgeType.ACCEPT)
                    second.append((m.value().decode(), m.delivery_count()))
            other.commit_sync()
    finally:
        other.close()
        quiet.close()
    return {"silent": sorted(first), "other": sorted(second)}


def two_members(bootstrap: str) -> list:
    """Two members of one partition with implicit acknowledgement (a record is accepted at its
    member's next poll), each in its thread, until the records came to them together."""
    topic, group = f"ck-two-{uuid.uuid4().hex[:6]}", f"ck-group-{uuid.uuid4().hex[:6]}"
    _prepare(bootstrap, topic, group)
    seen: list = []
    deadline = time.monotonic() + 60
    # both stop polling before either closes: a closing member releases what it holds (its
    # last poll is not acknowledged), which the other would rightly take again
    stopped = threading.Barrier(2, timeout=90)

    def member(name: str) -> None:
        consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        consumer.subscribe([topic])
        try:
            while len({v for _, v, _ in seen}) < RECORDS and time.monotonic() < deadline:
                seen.extend((name, m.value().decode(), m.delivery_count()) for m in consumer.poll(0.3)
                            if not m.error())
            stopped.wait()
        finally:
            consumer.close()
    with ThreadPoolExecutor(2) as pool:
        for done in [pool.submit(member, name) for name in ("a", "b")]:
            done.result()
    return seen


def both(scenario, ours: str, kafka: str) -> tuple[dict, dict]:
    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(scenario, ours), pool.submit(scenario, kafka)
        return a.result(), b.result()


def test_explicit_acknowledgement(oracle_twin, kafka_oracle):
    ours, kafka = both(explicit, oracle_twin.bootstrap, kafka_oracle.bootstrap_servers)
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        by_value: dict[str, list] = {}
        for value, count, kind in doc["deliveries"]:
            by_value.setdefault(value, []).append((count, kind))
        assert by_value["v3"] == [(1, "RELEASE"), (2, "ACCEPT")], (broker, by_value)
        assert by_value["v5"] == [(1, "REJECT")], (broker, by_value)
        assert by_value["v7"] == [(1, "RELEASE"), (2, "RELEASE"), (3, "RELEASE")], (broker, by_value)
        assert doc["after"] == 0, broker
    assert ours == kafka


def test_two_members_share_a_partition(oracle_twin, kafka_oracle):
    """Every record once, to one of the two members, with delivery count 1."""
    ours, kafka = both(two_members, oracle_twin.bootstrap, kafka_oracle.bootstrap_servers)
    for seen, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        assert sorted(v for _, v, _ in seen) == sorted(f"v{i}" for i in range(RECORDS)), (broker, seen)
        assert {count for *_, count in seen} == {1}, (broker, seen)


def test_a_silent_members_records_come_back(oracle_twin, kafka_oracle):
    ours, kafka = both(silent, oracle_twin.bootstrap, kafka_oracle.bootstrap_servers)
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        assert doc["silent"] and all(count == 1 for _, count in doc["silent"]), (broker, doc)
        assert [v for v, _ in doc["other"]] == [v for v, _ in doc["silent"]], (broker, doc)
        assert all(count == 2 for _, count in doc["other"]), (broker, doc)
    assert ours == kafka


def _consume(consumer, wanted: int, seen: list) -> None:
    """Poll (implicit acknowledgement) until ``wanted`` more records came, or 60 s."""
    goal, deadline = len(seen) + wanted, time.monotonic() + 60
    while len(seen) < goal and time.monotonic() < deadline:
        seen += [(m.partition(), m.offset(), m.delivery_count()) for m in consumer.poll(0.3) if not m.error()]


@pytest.mark.groupbroker(nodes=3)
def test_a_share_consumer_across_a_cluster(groupbroker):
    """A share consumer of three partitions, each led by another node of a 3-node groupbroker,
    keeps a share session with each node; every record comes once, with delivery count 1, also
    after a partition's leader moves (what was acknowledged stays so: the new leader starts from
    the share state; what was delivered and not yet acknowledged would come again)."""
    bootstrap, topic, group = groupbroker.bootstrap_servers, "ck-cluster-share", "ck-cluster-group"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(15)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[ConfigEntry(
        "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(15)
    producer = ck.Producer({"bootstrap.servers": bootstrap})

    def produce(per_partition: int) -> None:
        for p in range(3):
            for i in range(per_partition):
                producer.produce(topic, value=b"v%d" % i, partition=p)
        assert producer.flush(15) == 0

    produce(10)
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.subscribe([topic])
    seen: list = []
    try:
        _consume(consumer, 30, seen)
        consumer.commit_sync()           # the acknowledgements reach the leaders before one moves
        leader = admin.list_topics(topic, timeout=15).topics[topic].partitions[0].leader
        groupbroker.faults.move_leader(topic=topic, partition=0, node=(leader + 1) % 3)
        produce(10)
        _consume(consumer, 30, seen)
    finally:
        consumer.close()
    assert sorted(seen) == sorted((p, o, 1) for p in range(3) for o in range(20)), seen
    share_fetches = [r for r in groupbroker.recorded() if r.api == "ShareFetch"]
    assert {r.node for r in share_fetches} == {0, 1, 2}
    assert not [r for r in share_fetches if r.error in ("SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH")]
