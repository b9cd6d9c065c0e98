"""Share groups (KIP-932): delivery throughput and redelivery latency, groupbroker against
Apache Kafka 4.3.1, in one run.

On each broker: a topic of 3 partitions holding N records (confluent-kafka producer, 100-byte
values), then
* throughput: C confluent-kafka ShareConsumers (librdkafka's share consumer, implicit
  acknowledgement, ``share.auto.offset.reset=earliest``) in one share group, from subscribe
  until the group has received every record once; records per second;
* redelivery latency: one member in explicit mode RELEASEs a record and polls until it comes
  back with delivery count 2 (R times); the median and the worst, in ms.
Kafka runs from its Maven artefacts (apache_kafka, as the tests' oracle) with the same
settings. Ratios are groupbroker/Kafka (throughput: above 1 is faster; latency: below 1 is).

Run: ``.venv/bin/python bench/share_groups.py [--records 20000] [--consumers 3] [--rounds 20]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from e2e import OurBroker, log, table  # noqa: E402

from apache_kafka.process import KafkaProcess  # noqa: E402
from broker.testing.launcher import TEST_DEFAULTS  # noqa: E402

PARTITIONS = 3
SETTINGS = {**TEST_DEFAULTS, "group.initial.rebalance.delay.ms": "0"}


def prepare(bootstrap: str, topic: str, group: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 1000})
    value = b"x" * 100
    for i in range(records):
        producer.produce(topic, value=value, key=b"%d" % i)
        if i % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def throughput(bootstrap: str, records: int, consumers: int) -> float:
    """Records per second a share group of ``consumers`` members receives."""
    from confluent_kafka import ShareConsumer
    topic, group = f"bench-share-{uuid.uuid4().hex[:6]}", f"bench-group-{uuid.uuid4().hex[:6]}"
    prepare(bootstrap, topic, group, records)
    members = [ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
               for _ in range(consumers)]
    seen: set[tuple[int, int]] = set()
    start = time.monotonic()
    for m in members:
        m.subscribe([topic])
    deadline = start + 300
    while len(seen) < records and time.monotonic() < deadline:
        for m in members:
            for msg in m.poll(0.05):
                if msg.error() is None:
                    seen.add((msg.partition(), msg.offset()))
    elapsed = time.monotonic() - start
    for m in members:
        m.close()
    if len(seen) < records:
        raise RuntimeError(f"{bootstrap}: {len(seen)} of {records} records received")
    return records / elapsed


def redelivery(bootstrap: str, rounds: int) -> list[float]:
    """Milliseconds from a RELEASE until the record comes back, ``rounds`` times."""
    from confluent_kafka import AcknowledgeType, ShareConsumer
    topic, group = f"bench-redeliver-{uuid.uuid4().hex[:6]}", f"bench-group-{uuid.uuid4().hex[:6]}"
    prepare(bootstrap, topic, group, rounds)
    member = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3,
                            "share.acknowledgement.mode": "explicit"})
    member.subscribe([topic])
    latencies: list[float] = []
    released: dict[tuple[int, int], float] = {}
    deadline = time.monotonic() + 300
    while len(latencies) < rounds and time.monotonic() < deadline:
        for msg in member.poll(0.05):
            if msg.error() is not None:
                continue
            key = (msg.partition(), msg.offset())
            if msg.delivery_count() == 1:
                member.acknowledge(msg, AcknowledgeType.RELEASE)
                released[key] = time.monotonic()
            else:
                latencies.append((time.monotonic() - released.pop(key)) * 1000)
                member.acknowledge(msg, AcknowledgeType.ACCEPT)
        member.commit_sync()
    member.close()
    return latencies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--consumers", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-share-")
    results = {}
    ours = OurBroker(os.path.join(work, "ours"), SETTINGS)
    kafka = KafkaProcess(Path(work) / "kafka", SETTINGS).start()
    try:
        for name, bootstrap in (("groupbroker", ours.bootstrap), ("Kafka 4.3.1", kafka.bootstrap_servers)):
            log(f"{name}: throughput, {args.records} records, {args.consumers} consumers")
            rate = throughput(bootstrap, args.records, args.consumers)
            log(f"{name}: redelivery, {args.rounds} rounds")
            lat = redelivery(bootstrap, args.rounds)
            results[name] = (rate, statistics.median(lat), max(lat))
    finally:
        ours.stop()
        kafka.stop()
    (r_ours, m_ours, w_ours), (r_kafka, m_kafka, w_kafka) = results["groupbroker"], results["Kafka 4.3.1"]
    print(table(f"share groups: {args.records} records, {PARTITIONS} partitions, {args.consumers} consumers "
                f"(librdkafka {__import__('confluent_kafka').libversion()[0]})",
                ["", "groupbroker", "Kafka 4.3.1", "ratio"],
                [["delivery (records/s)", f"{r_ours:,.0f}", f"{r_kafka:,.0f}", f"{r_ours / r_kafka:.2f}"],
                 ["redelivery after RELEASE, median (ms)", f"{m_ours:.1f}", f"{m_kafka:.1f}", f"{m_ours / m_kafka:.2f}"],
                 ["redelivery after RELEASE, worst (ms)", f"{w_ours:.1f}", f"{w_kafka:.1f}", f"{w_ours / w_kafka:.2f}"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
