"""Issue 28: franz-go's share consumer (kgo.ShareGroup, v1.22) in a share group against
groupbroker and against Apache Kafka 4.3.1: explicit acknowledgement of each record (release
then accept, reject, a poison record archived at the delivery limit) and two members sharing a
partition with implicit acknowledgement; the outcomes compared. (No silent member: kgo keeps
fetching in the background while the application does not poll, so a member that holds its
records and stays quiet takes them again itself once their lock runs out.)"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.go_drivers import go_driver

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

RECORDS = 12


@pytest.fixture(scope="session")
def franz() -> str:
    return go_driver("franz")


def run_driver(franz: str, bootstrap: str, broker: str, command: str, *args: str, **configs: str) -> list[dict]:
    """A new topic of one partition with RECORDS records, a share group starting at the earliest
    record (with ``configs``), and the driver's ``command`` run on them: its events."""
    topic, group = f"franz-share-{uuid.uuid4().hex[:6]}", f"franz-group-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
        ConfigEntry(name.replace("_", "."), value, incremental_operation=AlterConfigOpType.SET)
        for name, value in {"share_auto_offset_reset": "earliest", **configs}.items()])
    admin.incremental_alter_configs([resource])[resource].result(15)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=b"m%d" % i, partition=0)
    assert producer.flush(15) == 0
    # the client's debug log comes with a failure, to tell which side stalled
    done = subprocess.run([franz, command, bootstrap, topic, group, *args], capture_output=True, text=True,
                          timeout=90, env={**os.environ, "FRANZ_DEBUG": "1"})
    assert done.returncode == 0, f"on {broker}:\n{done.stderr[-12000:]}\n{done.stdout}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def scenario(franz: str, bootstrap: str, broker: str) -> list:
    events = run_driver(franz, bootstrap, broker, "share", str(RECORDS), share_delivery_count_limit="3")
    return sorted((e["value"], e["count"], e["ack"]) for e in events if e["ev"] == "delivery")


def on_both(function, franz, oracle_twin, kafka_oracle):
    """``function(franz, bootstrap, broker)`` on groupbroker and on Kafka at once: both results."""
    with ThreadPoolExecutor(2) as pool:
        return [f.result() for f in [pool.submit(function, franz, *b) for b in
                                     ((oracle_twin.bootstrap, "groupbroker"), (kafka_oracle.bootstrap_servers, "Kafka"))]]


def test_explicit_acknowledgement(franz, oracle_twin, kafka_oracle):
    ours, kafka = on_both(scenario, franz, oracle_twin, kafka_oracle)
    for seen, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        by_value: dict[str, list] = {}
        for value, count, ack in seen:
            by_value.setdefault(value, []).append((count, ack))
        assert by_value["m3"] == [(1, "RELEASE"), (2, "ACCEPT")], (broker, by_value)
        assert by_value["m5"] == [(1, "REJECT")], (broker, by_value)
        assert by_value["m7"] == [(1, "RELEASE"), (2, "RELEASE"), (3, "RELEASE")], (broker, by_value)
    assert ours == kafka


def two_members(franz: str, bootstrap: str, broker: str) -> list:
    events = run_driver(franz, bootstrap, broker, "share-two", str(RECORDS))
    return [(e["member"], e["value"], e["count"]) for e in events if e["ev"] == "delivery"]


def test_two_members_share_a_partition(franz, oracle_twin, kafka_oracle):
    """Two members of one partition, implicit acknowledgement: every record once, to one of them."""
    ours, kafka = on_both(two_members, franz, oracle_twin, kafka_oracle)
    for seen, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        assert sorted(value for _, value, _ in seen) == sorted(f"m{i}" for i in range(RECORDS)), (broker, seen)
        assert {count for *_, count in seen} == {1}, (broker, seen)
    assert sorted(v for _, v, _ in ours) == sorted(v for _, v, _ in kafka)
