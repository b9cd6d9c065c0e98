"""Issue 4 acceptance: kafka-python 2.0.2 (older protocol versions) runs a basic group; issue 5's
interop matrix: it runs the shared consumer-group lifecycle too (group_lifecycle.py).

kafka-python 2.0.2 cannot share a virtualenv with 3.0.12, so a session fixture builds one in
the repo's ``.venv-kp2/`` (kept between runs, git-ignored by its own ``.gitignore``) and the
clients run there as processes: tests/support/processes.py doubles as their script.

kafka-python 2.0.2 predates KIP-511/KIP-482 (flexible versions): it probes with ApiVersions v0,
takes the broker for Kafka 2.4 and speaks old versions throughout. Observed with its DEBUG log:
Metadata v0/v1, Produce v7, FindCoordinator v0, JoinGroup v2, SyncGroup v1, Heartbeat v1,
Fetch v4, ListOffsets v1, OffsetCommit v2, OffsetFetch v1, LeaveGroup v1. No ``api_version``
pin is needed. (ListOffsets v1 found a broker bug: LeaderEpoch was set on versions without it.)
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from broker.testing.launcher import BrokerProcess
from tests.support.processes import REPO, ConsumerProcess, check_exactly_once, committed_records, wait_until
from tests.support.group_lifecycle import PARTITIONS as LIFECYCLE_PARTITIONS, Client, run_lifecycle
from tests.support.side_venv import side_python

KP2 = "2.0.2"
VENV = Path(os.environ.get("GROUPBROKER_KP2_VENV", REPO / ".venv-kp2"))   # override: elsewhere
HELPER = REPO / "tests" / "support" / "processes.py"
PARTITIONS = 4


@pytest.fixture(scope="session")
def kp2_python() -> str:
    """The python of a virtualenv holding kafka-python 2.0.2, built once and then reused."""
    return side_python(VENV, [f"kafka-python=={KP2}"],
                       f"import kafka; assert kafka.__version__ == {KP2!r}, kafka.__version__")


@pytest.fixture
def broker(tmp_path):
    b = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", {
        "group.initial.rebalance.delay.ms": 0,
        "group.min.session.timeout.ms": 1000,
        "num.partitions": PARTITIONS,            # the topic is auto-created by the producer
    }).start()
    yield b
    try:
        if b.running():
            assert b.stop() == 0
    finally:
        b.kill()


def run_kp2(python: str, *args, timeout: float = 60) -> dict:
    """Run one client script under kafka-python 2.0.2; its last JSON event."""
    done = subprocess.run([python, str(HELPER), *args], capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kafka_python_2_0_2_group(broker, kp2_python, tmp_path):
    """Produce with 2.0.2 (auto-creating the topic), consume with a 2-member 2.0.2 group that
    commits after every batch, then read the committed offsets back with 2.0.2 and 3.0.12."""
    topic, group = "legacy", "legacy-group"
    members = []
    try:
        members += [ConsumerProcess(f"old{i}", broker.bootstrap, group, topic, python=kp2_python,
                                    session_ms=3000, heartbeat_ms=500, max_poll_ms=10000,
                                    stderr_path=tmp_path / f"old{i}.log") for i in (1, 2)]
        produced_msg = run_kp2(kp2_python, "produce", "--bootstrap", broker.bootstrap, "--topic", topic,
                               "--count", "2000", "--partitions", str(PARTITIONS))
        produced = {tuple(r) for r in produced_msg["records"]}
        assert len(produced) == 2000

        def settled():
            views = [m.assignment for m in members]
            return (all(views) and len({m.generation for m in members}) == 1
                    and sorted(p for v in views for p in v) == list(range(PARTITIONS)))
        wait_until(settled, 30, "both 2.0.2 members to share the partitions")
        wait_until(lambda: committed_records(members) >= produced, 30, "2,000 records committed")
        check_exactly_once(produced, members)

        ends = {p: sum(1 for q, _ in produced if q == p) for p in range(PARTITIONS)}
        old_view = run_kp2(kp2_python, "committed", "--bootstrap", broker.bootstrap, "--topic", topic,
                           "--group", group)
        assert {int(p): o for p, o in old_view["offsets"].items()} == ends

        new = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False)
        try:
            assert {p: new.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)} == ends
        finally:
            new.close()

        for m in members:
            m.ask_to_stop()
        assert [m.terminate() for m in members] == [0, 0]
        broker.wait_for_log(rf"group {group}: \w+ -> Empty \(generation \d+, members \[\]\)", timeout=10)
    finally:
        for m in members:
            m.close()


class OldMember:
    """A kafka-python 2.0.2 ConsumerProcess as a group_lifecycle member: its records come from
    its batch events (no values), and leaving is close() on SIGTERM (LeaveGroup v1)."""

    def __init__(self, proc: ConsumerProcess, log_path: Path):
        self.name, self.proc, self.log_path = proc.name, proc, log_path

    def records(self):
        return [(p, o, None) for batch in self.proc.batches() for p, o in batch["records"]]

    def leave(self) -> int:
        return self.proc.terminate()

    def close(self) -> None:
        self.proc.close()

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""


def test_kafka_python_2_0_2_lifecycle(start_broker, kp2_python, tmp_path):
    """produce -> 3 members consume and commit all -> a 4th joins -> one leaves -> offsets read
    back with the groups CLI, all with 2.0.2; every record read exactly once, by its owner."""
    broker = start_broker({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000})

    def produce(topic: str, start: int, count: int) -> None:
        run_kp2(kp2_python, "produce", "--bootstrap", broker.bootstrap, "--topic", topic,
                "--start", str(start), "--count", str(count), "--partitions", str(LIFECYCLE_PARTITIONS))

    def consume(name: str, group: str, topic: str) -> OldMember:
        log = tmp_path / f"{name}.log"
        return OldMember(ConsumerProcess(name, broker.bootstrap, group, topic, python=kp2_python,
                                         session_ms=10000, stderr_path=log), log)

    run_lifecycle(broker, Client("kafka-python-2.0.2", produce, consume))
