"""Issue 28: franz-go's share consumer (kgo.ShareGroup, v1.22) in a share group against
groupbroker and against Apache Kafka 4.3.1: explicit acknowledgement of each record (release
then accept, reject, a poison record archived at the delivery limit), the outcomes compared."""

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


def scenario(franz: str, bootstrap: str, broker: str) -> list:
    topic, group = f"franz-share-{uuid.uuid4().hex[:6]}", f"franz-group-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in (("share.auto.offset.reset", "earliest"), ("share.delivery.count.limit", "3"))])
    admin.incremental_alter_configs([resource])[resource].result(15)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=b"m%d" % i, partition=0)
    assert producer.flush(15) == 0
    # the client's debug log (about 80 lines) comes with a failure, to tell which side stalled
    done = subprocess.run([franz, "share", bootstrap, topic, group, str(RECORDS)], capture_output=True, text=True,
                          timeout=90, env={**os.environ, "FRANZ_DEBUG": "1"})
    assert done.returncode == 0, f"on {broker}:\n{done.stderr[-12000:]}\n{done.stdout}"
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return sorted((e["value"], e["count"], e["ack"]) for e in events if e["ev"] == "delivery")


def test_explicit_acknowledgement(franz, oracle_twin, kafka_oracle):
    with ThreadPoolExecutor(2) as pool:
        ours, kafka = (f.result() for f in [pool.submit(scenario, franz, *b) for b in
                                            ((oracle_twin.bootstrap, "groupbroker"),
                                             (kafka_oracle.bootstrap_servers, "Kafka"))])
    for seen, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        by_value: dict[str, list] = {}
        for value, count, ack in seen:
            by_value.setdefault(value, []).append((count, ack))
        assert by_value["m3"] == [(1, "RELEASE"), (2, "ACCEPT")], (broker, by_value)
        assert by_value["m5"] == [(1, "REJECT")], (broker, by_value)
        assert by_value["m7"] == [(1, "RELEASE"), (2, "RELEASE"), (3, "RELEASE")], (broker, by_value)
    assert ours == kafka
