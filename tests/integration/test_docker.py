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
    assert compose("config", "--services").stdout.split() == [
        "broker", "producer", "consumer", "report", "cluster", "cluster-producer", "cluster-consumer"]
    resolved = compose("config").stdout
    assert re.search(r"^volumes:\n  broker-data: \{\}$", resolved, re.MULTILINE)
    assert re.search(r"^\s+- broker-data:/data:rw$", resolved, re.MULTILINE)
    assert "condition: service_healthy" in resolved
    assert re.search(r"^\s+- broker-data:/data:ro$", resolved, re.MULTILINE), "report reads the volume"


def field(service: str, key: str):
    """A one-line JSON value (``key: [...]``) of a service in the compose file, as written."""
    lines = COMPOSE.read_text().splitlines()
    start = lines.index(f"  {service}:")
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"  \S", lines[i]) or re.match(r"\S", lines[i])),
               len(lines))
    line = next(line for line in lines[start:end] if line.strip().startswith(f"{key}:"))
    return json.loads(line.split(f"{key}:", 1)[1])


def healthcheck(port: int, name: str = "broker") -> subprocess.CompletedProcess:
    """A service's healthcheck command, aimed at ports from ``port`` instead of from 9092."""
    command = field(name, "test")
    assert command[:2] == ["CMD", "python"]
    code = command[-1]
    assert "9092" in code
    for offset in (2, 1, 0):
        code = code.replace(str(9092 + offset), str(port + offset))
    return subprocess.run([sys.executable, *command[2:-1], code], capture_output=True, text=True, timeout=30)


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


def consecutive_free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports of 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        held = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no consecutive free ports")


def test_cluster_service_runs_three_nodes_advertised_by_service_name(tmp_path):
    """The cluster profile's command line, run here on other ports: three nodes, each advertised
    as cluster:<its port>, every one passing the service's healthcheck."""
    from kafka_client.blocking import BlockingClient
    from protocol import REQUESTS
    from protocol.api_keys import ApiKey

    assert field("cluster", "profiles") == ["cluster"]
    resolved = compose("--profile", "cluster", "config").stdout
    assert re.search(r"^\s+BOOTSTRAP_SERVERS: cluster:9092,cluster:9093,cluster:9094$", resolved, re.MULTILINE)
    shell = field("cluster", "command")[-1]
    assert shell.startswith("exec groupbroker serve --nodes 3 ")
    base = consecutive_free_ports(3)
    args = shell.removeprefix("exec groupbroker ").replace("9092", str(base)).replace("/data", str(tmp_path))
    args = args.replace("groupbroker.admin.port=9990", "groupbroker.admin.port=0").replace('"', "").split()
    args[args.index("--host") + 1] = "127.0.0.1"
    proc = subprocess.Popen([sys.executable, "-m", "broker", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line == f"groupbroker listening on 127.0.0.1:{base},127.0.0.1:{base + 1},127.0.0.1:{base + 2}\n"
        import time
        deadline = time.monotonic() + 20
        while (checked := healthcheck(base, "cluster")).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert checked.returncode == 0, checked.stderr
        client = BlockingClient("127.0.0.1", base + 2)
        metadata = client.call(ApiKey.METADATA, 12, REQUESTS[ApiKey.METADATA].cls(topics=None))
        client.close()
        assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [
            (n, "cluster", base + n) for n in range(3)]
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0
