"""Issue 5 interop matrix: kafkajs 2.2.4 (Node.js) against ``groupbroker serve``, through the
shared consumer-group lifecycle (group_lifecycle.py).

The client side is tests/interop/clients/kafkajs/driver.js, one ``node`` process per member or
producer. kafkajs is pinned by tests/interop/clients/kafkajs/package.json and package-lock.json;
.ci/setup/clients.sh runs ``npm ci`` there, and when node_modules is missing (a developer's
first ``make test``) the session fixture below runs ``npm ci`` itself, which needs the npm
registry. kafkajs negotiates versions with ApiVersions; it joins with JoinGroup v5, commits
after every batch, and ``disconnect()`` sends LeaveGroup.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.processes import REPO, missing, require_tool
from tests.support.group_lifecycle import PARTITIONS, Client, ClientProcess, run_lifecycle, run_parallel

KAFKAJS = "2.2.4"
DRIVER_DIR = REPO / "tests" / "interop" / "clients" / "kafkajs"
DRIVER = DRIVER_DIR / "driver.js"


@pytest.fixture(scope="session")
def node() -> str:
    """``node``, with kafkajs KAFKAJS installed beside the driver (``npm ci`` if it is not)."""
    node = require_tool("node", "apt-get install nodejs npm")
    installed = DRIVER_DIR / "node_modules" / "kafkajs" / "package.json"
    if not installed.exists():
        npm = require_tool("npm", "apt-get install npm")
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=DRIVER_DIR,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            missing(f"npm ci in {DRIVER_DIR} failed: {done.stderr[-2000:]}")
    version = subprocess.run([node, "-p", "require('kafkajs/package.json').version"], cwd=DRIVER_DIR,
                             capture_output=True, text=True, timeout=60).stdout.strip()
    assert version == KAFKAJS, f"node_modules holds kafkajs {version!r}, not {KAFKAJS}: run npm ci"
    return node


def kafkajs_client(node: str, bootstrap: str, tmp_path) -> Client:
    env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")

    def produce(topic: str, start: int, count: int) -> None:
        run_parallel([[node, str(DRIVER), "produce", bootstrap, topic, str(start), str(count),
                       str(PARTITIONS)]], env=env)

    def consume(name: str, group: str, topic: str) -> ClientProcess:
        return ClientProcess(name, [node, str(DRIVER), "consume", bootstrap, topic, group, name],
                             tmp_path / f"{name}.log", env=env)

    return Client("kafkajs", produce, consume)


def test_group_lifecycle_kafkajs(broker, node, tmp_path):
    """produce -> 3 members consume and commit all -> a 4th joins -> one leaves -> offsets read
    back with the groups CLI; every record read exactly once, by its partition's owner."""
    run_lifecycle(broker, kafkajs_client(node, broker.bootstrap, tmp_path))
