"""Issue 28: Kafka's KafkaShareConsumer (kafka-clients 4.3.1) in share groups, against groupbroker
and against Apache Kafka 4.3.1 at once (ShareScenario.java), the outcomes compared: what each
member received, with which delivery count, and what became of each record."""

from __future__ import annotations

import pytest

from tests.interop.java_driver import assert_same, compiled, run_both

RECORDS = 12


@pytest.fixture(scope="session")
def java_classpath() -> str:
    return compiled()


@pytest.fixture
def both(java_classpath, oracle_twin, kafka_oracle, tmp_path):
    def run(mode: str):
        return run_both(java_classpath, oracle_twin.bootstrap, kafka_oracle.bootstrap_servers, "share", mode,
                        tmp_path=tmp_path)
    return run


def test_explicit_acknowledgement(both):
    ours, kafka = both("explicit")
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        deliveries = doc["result"]["deliveries"]
        by_value: dict[str, list] = {}
        for d in deliveries:
            by_value.setdefault(d["value"], []).append((d["delivery_count"], d["action"]))
        assert by_value["v3"] == [(1, "RELEASE"), (2, "ACCEPT")], (broker, by_value["v3"])
        assert by_value["v5"] == [(1, "REJECT")], (broker, by_value["v5"])
        assert by_value["v7"] == [(1, "RELEASE"), (2, "RELEASE"), (3, "RELEASE")], (broker, by_value["v7"])
        assert all(by_value[f"v{i}"] == [(1, "ACCEPT")] for i in range(RECORDS) if i not in (3, 5, 7)), broker
        assert doc["result"]["after"] == 0, f"{broker}: a record came back after the delivery limit"
    key = lambda d: (d["value"], d["delivery_count"])                    # noqa: E731
    for doc in (ours, kafka):
        doc["result"]["deliveries"].sort(key=key)
    assert_same(ours, kafka, "explicit acknowledgement")


def test_two_members_share_a_partition(both):
    ours, kafka = both("implicit")
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        result = doc["result"]
        assert result["distinct"] == result["total"] == RECORDS, (broker, result)
        assert result["counts"] == [1], (broker, result)
    assert_same(ours, kafka, "implicit acknowledgement")


def test_a_silent_members_records_come_back(both):
    ours, kafka = both("crash")
    for doc, broker in ((ours, "groupbroker"), (kafka, "Kafka")):
        silent, other = doc["result"]["silent"], doc["result"]["other"]
        assert silent and all(d["delivery_count"] == 1 for d in silent), (broker, silent)
        again = {d["value"] for d in other if d["delivery_count"] == 2}
        assert {d["value"] for d in silent} <= again, (broker, silent, other)
    for doc in (ours, kafka):
        for part in ("silent", "other"):
            doc["result"][part].sort(key=lambda d: (d["value"], d["delivery_count"]))
    assert_same(ours, kafka, "a silent member")
