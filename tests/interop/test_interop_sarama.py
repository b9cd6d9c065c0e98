"""Issue 5 interop matrix: Sarama 1.22.1 (Go, Debian's golang-github-shopify-sarama-dev) at
``sarama.V2_1_0_0`` against ``groupbroker serve``, through the shared consumer-group lifecycle
(group_lifecycle.py).

The client side is tests/interop/clients/sarama/main.go, built once per test session, offline, in
GOPATH mode against Debian's Go sources (/usr/share/gocode). Pinned at V2_1_0_0, Sarama sends
old versions throughout: JoinGroup v1, SyncGroup v0, Heartbeat v0, LeaveGroup v0,
OffsetFetch v1, OffsetCommit v2, Metadata v5, ListOffsets v1, Fetch v4, Produce v3. It marks
each record and commits every 100 ms and when a generation ends; ``Close()`` sends LeaveGroup.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO, missing, require_tool
from tests.support.group_lifecycle import PARTITIONS, Client, ClientProcess, run_lifecycle, run_parallel

INSTALL = "apt-get install golang-go golang-github-shopify-sarama-dev"
GOCODE = Path("/usr/share/gocode")
SOURCE = REPO / "tests" / "interop" / "clients" / "sarama"


@pytest.fixture(scope="session")
def sarama_driver(tmp_path_factory) -> str:
    """The driver binary, built with Debian's Go and Sarama, nothing downloaded (GOPROXY=off)."""
    go = require_tool("go", INSTALL)
    if not (GOCODE / "src" / "github.com" / "Shopify" / "sarama").is_dir():
        missing(f"Sarama's Go sources are not in {GOCODE} (install: {INSTALL})")
    out = tmp_path_factory.mktemp("sarama")
    env = dict(os.environ, GO111MODULE="off", GOPATH=f"{out / 'gopath'}:{GOCODE}", GOPROXY="off",
               GOFLAGS="", CGO_CFLAGS="-O2 -Wno-deprecated-declarations")
    if not (env.get("HOME") or env.get("XDG_CACHE_HOME") or env.get("GOCACHE")):
        env["GOCACHE"] = str(out / "gocache")
    binary = out / "sarama-driver"
    done = subprocess.run([go, "build", "-o", str(binary), "."], cwd=SOURCE, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"go build failed:\n{done.stderr[-4000:]}"
    return str(binary)


def sarama_client(driver: str, bootstrap: str, tmp_path) -> Client:
    def produce(topic: str, start: int, count: int) -> None:
        run_parallel([[driver, "produce", bootstrap, topic, str(start), str(count), str(PARTITIONS)]])

    def consume(name: str, group: str, topic: str) -> ClientProcess:
        return ClientProcess(name, [driver, "consume", bootstrap, topic, group, name],
                             tmp_path / f"{name}.log")

    return Client("sarama", produce, consume)


def test_group_lifecycle_sarama(broker, sarama_driver, tmp_path):
    """produce -> 3 members consume and commit all -> a 4th joins -> one leaves -> offsets read
    back with the groups CLI; every record read exactly once, by its partition's owner."""
    run_lifecycle(broker, sarama_client(sarama_driver, broker.bootstrap, tmp_path))
