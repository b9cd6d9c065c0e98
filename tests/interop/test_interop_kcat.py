"""Issue 5 interop matrix: kcat 1.7.1 (Debian's, librdkafka 2.0.2 built in) against
``groupbroker serve``, through the shared consumer-group lifecycle (group_lifecycle.py).

kcat produces with ``-P`` (one process per partition, all at once, each reading its lines from
a file) and consumes with ``-G``, librdkafka's balanced consumer group: records printed as
``%p %o %s``, offsets auto-committed (every 5 s, librdkafka's default), and SIGTERM closing
the consumer (LeaveGroup). librdkafka 2.0.2 is older than the confluent-kafka (librdkafka 2.16) of
test_interop_confluent.py.
"""

from __future__ import annotations

import pytest

from tests.support.processes import require_tool
from tests.support.group_lifecycle import PARTITIONS, Client, ClientProcess, run_lifecycle, run_parallel

INSTALL = "apt-get install kcat"
# kcat sets a name that is both a topic and a global property on the topic config, so
# auto.commit.interval.ms cannot be lowered from its 5 s: each phase waits up to 5 s for the
# periodic commit.
CONSUMER = {"auto.offset.reset": "earliest", "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 300, "fetch.wait.max.ms": 100, "max.poll.interval.ms": 10000}


@pytest.fixture
def kcat() -> str:
    return require_tool("kcat", INSTALL)


def settings(props: dict) -> list[str]:
    return [arg for key, value in props.items() for arg in ("-X", f"{key}={value}")]


def kcat_client(kcat: str, bootstrap: str, tmp_path) -> Client:
    def produce(topic: str, start: int, count: int) -> None:
        commands = []
        for p in range(PARTITIONS):
            lines = tmp_path / f"produce-{start}-p{p}.txt"
            lines.write_text("".join(f"m{i}\n" for i in range(start, start + count)
                                     if i % PARTITIONS == p))
            commands.append([kcat, "-P", "-b", bootstrap, "-t", topic, "-p", str(p),
                             "-X", "acks=all", "-l", str(lines)])
        run_parallel(commands)

    def consume(name: str, group: str, topic: str) -> ClientProcess:
        cmd = [kcat, "-b", bootstrap, "-G", group, "-X", f"client.id={name}",
               *settings(CONSUMER), "-u", "-f", r"%p %o %s\n", topic]
        return ClientProcess(name, cmd, tmp_path / f"{name}.log")

    return Client("kcat", produce, consume)


def test_group_lifecycle_kcat(broker, kcat, tmp_path):
    """produce -> 3 members consume and commit all -> a 4th joins -> one leaves -> offsets read
    back with the groups CLI; every record read exactly once, by its partition's owner."""
    run_lifecycle(broker, kcat_client(kcat, broker.bootstrap, tmp_path))
