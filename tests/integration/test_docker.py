"""The Docker files, without a Docker engine (none runs in CI): docker-compose.yml must pass
``docker-compose config``, its broker healthcheck must pass against a real broker (and fail
without one), and examples/demo.py, which the demo services run, must produce and consume
through a broker the test starts."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from tests.support.processes import REPO

COMPOSE = REPO / "docker-compose.yml"


def docker_compose() -> str:
    """The docker-compose executable: in CI (``CI`` set, .ci/setup/compose.sh installs it) its
    absence fails the test; elsewhere the test is skipped."""
    found = shutil.which("docker-compose")
    if found:
        return found
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail("CI is set but docker-compose is missing (.ci/setup/compose.sh installs it)",
                    pytrace=False)
    pytest.skip("docker-compose is not installed (apt-get install docker-compose)")


def compose(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([docker_compose(), "-f", str(COMPOSE), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_compose_file_is_valid():
    checked = compose("config", "-q")
    assert checked.returncode == 0, checked.stderr
    assert compose("config", "--services").stdout.split() == ["broker", "producer", "consumer", "report"]
    resolved = compose("config").stdout
    assert re.search(r"^volumes:\n  broker-data: \{\}$", resolved, re.MULTILINE)
    assert re.search(r"^\s+- broker-data:/data:rw$", resolved, re.MULTILINE)
    assert "condition: service_healthy" in resolved
    assert re.search(r"^\s+- broker-data:/data:ro$", resolved, re.MULTILINE), "report reads the volume"


def healthcheck(port: int) -> subprocess.CompletedProcess:
    """The broker service's healthcheck command, aimed at ``port`` instead of 9092."""
    line = next(line for line in COMPOSE.read_text().splitlines() if line.strip().startswith("test:"))
    command = json.loads(line.split("test:", 1)[1])
    assert command[:2] == ["CMD", "python"]
    code = command[-1]
    assert "9092" in code
    return subprocess.run([sys.executable, *command[2:-1], code.replace("9092", str(port))],
                          capture_output=True, text=True, timeout=30)


def test_healthcheck_needs_a_broker_that_answers(broker):
    assert healthcheck(broker.port).returncode == 0
    with socket.socket() as silent:                   # listens, never answers a request
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        assert healthcheck(silent.getsockname()[1]).returncode != 0


def demo(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "examples" / "demo.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


def test_demo_produces_and_a_group_consumes(broker):
    produced = demo("produce", "--bootstrap-server", broker.bootstrap, "--count", "12", "--interval", "0")
    assert produced.returncode == 0, produced.stderr
    sent = re.findall(r"^produced (demo\[\d\]@\d+): (message \d+)", produced.stdout, re.MULTILINE)
    assert len(sent) == 12
    assert {p.split("@")[0] for p, _ in sent} == {"demo[0]", "demo[1]", "demo[2]"}, \
        "the topic was created with 3 partitions and the keys spread over them"

    consumed = demo("consume", "--count", "12", "--timeout", "30",
                    env={"BOOTSTRAP_SERVERS": broker.bootstrap})        # the way compose passes it
    assert consumed.returncode == 0, consumed.stdout + consumed.stderr
    got = re.findall(r"^consumed (demo\[\d\]@\d+) \(group demo-group, generation (\d+)\): (message \d+)",
                     consumed.stdout, re.MULTILINE)
    assert sorted((p, m) for p, _, m in got) == sorted(sent)
    assert all(int(g) >= 1 for _, g, _ in got)
    broker.wait_for_log(r"group demo-group: \w+ -> Empty", timeout=10)    # it left the group

    again = demo("consume", "--count", "1", "--timeout", "3", "--bootstrap-server", broker.bootstrap)
    assert again.returncode == 1 and "timed out after 3.0s with 0 of 1" in again.stdout, \
        "the group's commits must have been kept: nothing is left to consume"
