"""One Apache Kafka broker in KRaft mode (broker and controller in one JVM), for tests.

:class:`KafkaProcess` formats a fresh data dir with Kafka's ``StorageTool``, starts
``kafka.Kafka`` with a small heap on free ports of 127.0.0.1, and returns once the broker
answers, its group and transaction coordinators have loaded every partition and it holds a
block of producer ids (so the first group or producer request of a test is not answered
COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE, which groupbroker, ready when it
says so, never answers then).
Settings take Kafka's names; :data:`KAFKA_TEST_SETTINGS` are the fixed ones a one-node test
broker needs (replication factors of 1, a log cleaner buffer small enough for the heap).
"""

from __future__ import annotations

import base64
import logging
import os
import socket
import subprocess
import time
from pathlib import Path

from kafka_client.blocking import BlockingClient, ConnectionFailed
from apache_kafka.artefacts import KAFKA_VERSION, java, kafka_classpath
from apache_kafka.properties import kafka_props
from coordinator.routing import group_per_shard
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import ProtocolError
from protocol.messages import REQUESTS

log = logging.getLogger("groupbroker.kafka")

#: The JVM: a 384 MB heap (Kafka's default is 1 GB), one GC thread, and the quick compiler only
#: (a test broker lives for minutes: start-up time beats peak throughput).
JVM_OPTIONS = ("-Xmx384m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true")

#: What a single-node test broker needs whatever the test: one replica of every internal topic,
#: and the cleaner's dedupe buffer (allocated on the heap, 128 MB by default) at its 2 MB floor.
KAFKA_TEST_SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "log.cleaner.dedupe.buffer.size": "2097152",
}

#: Kafka logs warnings and worse, and the line that says it has started (the start-up time).
LOG4J = """\
status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = OUT
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, base64url without padding, never starting with "-"
    (Kafka's Uuid.randomUuid draws again then: the tools would read it as an option)."""
    while (found := base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")).startswith("-"):
        pass
    return found


class KafkaProcess:
    """``workdir`` holds the data dir, the properties and Kafka's output (``kafka.log``).
    ``features`` are finalized at format time, e.g. ``{"transaction.version": 0}``."""

    def __init__(self, workdir: str | Path, settings: dict | None = None, *,
                 features: dict[str, int] | None = None, node_id: int = 1):
        self.workdir = Path(workdir)
        self.settings = kafka_props(settings or {})
        self.features = dict(features or {})
        self.node_id = node_id
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.startup_seconds: float | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "kafka.log"

    def properties(self, port: int, controller_port: int) -> dict[str, str]:
        return {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": f"{self.node_id}@{self.host}:{controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{port},CONTROLLER://{self.host}:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            **KAFKA_TEST_SETTINGS,
            **self.settings,
        }

    def start(self, timeout: float = 90.0) -> KafkaProcess:
        """Format, start, and return once the broker serves groups and transactions."""
        began = time.monotonic()
        classpath = kafka_classpath()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        config = self.workdir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in
                                  self.properties(self.port, free_port()).items()))
        (self.workdir / "log4j2.properties").write_text(LOG4J)
        base = [java(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                "-cp", classpath]
        feature_flags = [arg for name, level in self.features.items() for arg in ("-f", f"{name}={level}")]
        formatted = subprocess.run([*base, "kafka.tools.StorageTool", "format", "-t", random_cluster_id(),
                                    "-c", str(config), *feature_flags], capture_output=True, text=True)
        if formatted.returncode != 0:
            raise RuntimeError(f"Kafka's StorageTool could not format {self.workdir}:\n"
                               f"{(formatted.stdout + formatted.stderr)[-3000:]}")
        self._command = [*base, "kafka.Kafka", str(config)]
        self._launch()
        try:
            self._wait_until_serving(began + timeout)
        except BaseException:                # a failed or interrupted start leaves no JVM behind
            self.kill()
            raise
        self.startup_seconds = time.monotonic() - began
        log.info("Apache Kafka %s serves on %s after %.1f s (format included), RSS %.0f MB",
                 KAFKA_VERSION, self.bootstrap_servers, self.startup_seconds, self.rss_bytes() / 2**20)
        return self

    def _launch(self) -> None:
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(self._command, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def restart(self, *, crash: bool = False, timeout: float = 90.0) -> None:
        """Stop (SIGTERM; SIGKILL with ``crash``) and start again on the same ports and data."""
        if crash:
            self.kill()
        else:
            self.stop()
        self._launch()
        try:
            self._wait_until_serving(time.monotonic() + timeout)
        except BaseException:
            self.kill()
            raise

    def _wait_until_serving(self, deadline: float) -> None:
        client = None
        while client is None:
            self._check_alive()
            try:
                client = BlockingClient(self.host, self.port, client_id="groupbroker-oracle", timeout=5)
            except ConnectionFailed:
                client = None
            else:
                try:
                    client.negotiate()
                except (ConnectionFailed, ProtocolError):
                    client.close()
                    client = None
            if client is None:
                self._check_time(deadline)
                time.sleep(0.1)
        try:
            find = REQUESTS[ApiKey.FIND_COORDINATOR].cls
            for key_type in (0, 1):        # creates __consumer_offsets, then __transaction_state
                self._until_none(deadline, lambda: client.call(ApiKey.FIND_COORDINATOR, 3, find(
                    key="groupbroker-warmup", key_type=key_type)).error_code)
            fetch = REQUESTS[ApiKey.OFFSET_FETCH].cls
            for group in group_per_shard("groupbroker-warmup"):
                self._until_none(deadline, lambda: client.call(ApiKey.OFFSET_FETCH, 7, fetch(
                    group_id=group, topics=None)).error_code)
            describe = REQUESTS[ApiKey.DESCRIBE_TRANSACTIONS].cls
            for txn in group_per_shard("groupbroker-warmup"):     # transactional ids hash the same way
                self._until_none(deadline, lambda: _loaded(client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, describe(
                    transactional_ids=(txn,))).transaction_states[0].error_code))
            init = REQUESTS[ApiKey.INIT_PRODUCER_ID].cls  # the first producer id block comes from the controller
            self._until_none(deadline, lambda: client.call(ApiKey.INIT_PRODUCER_ID, 4, init(
                transactional_id=None, transaction_timeout_ms=60000)).error_code)
        finally:
            client.close()

    def _until_none(self, deadline: float, ask) -> None:
        while (code := ask()) != ErrorCode.NONE:
            self._check_alive()
            self._check_time(deadline, f"still answers {ErrorCode.lookup(code).name}")
            time.sleep(0.05)

    def _check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"Kafka exited with {self.proc.returncode}:\n{self.log_text()[-4000:]}")

    def _check_time(self, deadline: float, what: str = "does not answer") -> None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"Kafka {what} on {self.bootstrap_servers}:\n{self.log_text()[-4000:]}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def rss_bytes(self) -> int:
        """The JVM's resident memory (Linux)."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        return next((int(line.split()[1]) * 1024 for line in status.splitlines()
                     if line.startswith("VmRSS:")), 0)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (Kafka's controlled shutdown), then wait; killed if it takes longer."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _loaded(code: int) -> int:
    """NONE once a transaction-state partition answers for its ids (none exists: not found)."""
    return ErrorCode.NONE if code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND else code
