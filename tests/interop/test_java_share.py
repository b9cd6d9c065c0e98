"""Issue 28: Kafka's KafkaShareConsumer (kafka-clients 4.3.1) in share groups, against groupbroker
and against Apache Kafka 4.3.1 at once (ShareScenario.java), the outcomes compared: what each
member received, with which delivery count, and what became of each record."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from apache_kafka.process import KafkaProcess
from tests.conftest import ORACLE_SETTINGS
from tests.interop.java_driver import JVM_FLAGS, SOURCE, assert_same, compiled, run_both

LOG4J = SOURCE / "log4j2.properties"

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


def restart_run(classpath: str, bootstrap: str, restart, log: Path) -> dict:
    """ShareRestart.java against one broker, ``restart()`` called while it is paused."""
    suffix = uuid.uuid4().hex[:6]
    with open(log, "w") as err:
        proc = subprocess.Popen([shutil.which("java"), *JVM_FLAGS, f"-Dlog4j2.configurationFile={LOG4J}", "-cp",
                                 classpath, "ShareRestart", bootstrap, f"share-restart-{suffix}",
                                 f"share-restart-group-{suffix}"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            paused = json.loads(proc.stdout.readline() or "{}")
            assert paused.get("paused", 0) >= 10, (paused, log.read_text()[-3000:])
            restart()
            proc.stdin.write("go\n")
            proc.stdin.flush()
            out, _ = proc.communicate(timeout=150)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, log.read_text()[-4000:]
    return json.loads(out.splitlines()[-1])["result"]


@pytest.mark.parametrize("crash", [False, True], ids=["restart", "kill -9"])
def test_acknowledgements_survive_a_broker_restart(java_classpath, start_broker, tmp_path, crash):
    """A KafkaShareConsumer accepts half the records, its broker restarts (cleanly, or killed),
    the consumer goes on: what it accepted before never comes again, every other record comes;
    the same against Apache Kafka (a broker of this test's own, restarted the same way)."""
    ours = start_broker(ORACLE_SETTINGS)
    kafka = KafkaProcess(tmp_path / "kafka", ORACLE_SETTINGS).start()

    def restart_ours() -> None:
        if crash:
            ours.kill()
            ours.start(ours.port)
        else:
            ours.restart()
    try:
        with ThreadPoolExecutor(2) as pool:
            mine = pool.submit(restart_run, java_classpath, ours.bootstrap, restart_ours, tmp_path / "ours.log")
            theirs = pool.submit(restart_run, java_classpath, kafka.bootstrap_servers,
                                 lambda: kafka.restart(crash=crash), tmp_path / "kafka.log")
            results = {"groupbroker": mine.result(), "Kafka": theirs.result()}
    finally:
        kafka.stop()
    for broker, result in results.items():
        values = [value for value, _ in result["deliveries"]]
        assert set(values) == {f"v{i}" for i in range(20)}, (broker, result)
        before = set(result["before"])
        assert all(values.count(v) == 1 for v in before), (broker, result)
    ours_seen, kafka_seen = (sorted(map(tuple, r["deliveries"])) for r in results.values())
    assert ours_seen == kafka_seen, results
