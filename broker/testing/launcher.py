"""One way to launch a broker in its own process: ``python -m broker serve --port 0``.

Tests, examples and benchmarks start brokers with :class:`BrokerProcess`: Kafka-named ``-o``
overrides on a data dir, ready once the broker prints its one stdout line
``groupbroker listening on H:P``, answers ApiVersions and has loaded its coordinator shards (it
answers as soon as it listens, and a group whose shard is still loading gets
COORDINATOR_LOAD_IN_PROGRESS meanwhile; its log says when all have loaded), its stderr (the log)
in a file to read back, stopped with SIGTERM (the broker promises exit 0), killed, or restarted
on the same data dir (by default on the same port). The embedded broker (in-process) takes its
settings through :func:`kafka_props` and checks readiness with :func:`wait_until_answering` too.
No trio and no server code in this process: the readiness check is our blocking client.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from apache_kafka.properties import kafka_props
from kafka_client.blocking import BlockingClient, ConnectionFailed
from protocol.exceptions import ProtocolError

REPO = Path(__file__).resolve().parent.parent.parent
#: ``groupbroker serve``'s line: every node's host:port, node 0 first (one, on a single node)
LISTENING = re.compile(r"^groupbroker listening on ((?:[^\s,]+:\d+)(?:,[^\s,]+:\d+)*)$")
#: The broker's log line once every coordinator shard has loaded (broker/server/broker.py).
SHARDS_LOADED = re.compile(r" all \d+ coordinator shards loaded(?:;|$)", re.MULTILINE)
#: The log line naming each listener (broker/server/broker.py); with several nodes, one per node.
LISTENER_LINE = re.compile(r"listening on (?P<name>\w+)(?: \(\w+\))? on (?P<address>\S+)$", re.MULTILINE)

#: Fast group settings for test brokers: a short initial rebalance delay, short sessions allowed.
#:
#: group.initial.rebalance.delay.ms=50 (Kafka's default is 3000): a new group's first join phase
#: ends once a 50 ms window passes without a newcomer (capped by the rebalance timeout), so a
#: lone consumer waits 50 ms and consumers started together, whose JoinGroups arrive within
#: tens of ms of each other, all land in generation 1 after about 100 ms. With 0 the first
#: member completes the join alone and the rest force more generations, which the clients
#: only notice late: librdkafka rejoins after a failed SyncGroup at most once a second, and a
#: member that already synced (either client) learns of the rebalance at its next heartbeat,
#: 3 s by default; kafka-python's leader may also assign before it has the topic's metadata
#: (its retry_backoff_ms of 100 ms holds the refresh back) and then rejoin. Measured with
#: bench/group_forming.py: 1, 5 and 20 kafka-python or confluent-kafka consumers hold one
#: generation's assignment within 0.5 s at 50 ms; with 0 groups of 5 and 20 need 2-3 s.
TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": "50", "group.min.session.timeout.ms": "500",
                 # KIP-848 groups: heartbeats every 500 ms, sessions of 10 s
                 "group.consumer.heartbeat.interval.ms": "500",
                 "group.consumer.min.heartbeat.interval.ms": "100",
                 "group.consumer.session.timeout.ms": "10000",
                 "group.consumer.min.session.timeout.ms": "1000",
                 # KIP-932 share groups: the same
                 "group.share.heartbeat.interval.ms": "500",
                 "group.share.min.heartbeat.interval.ms": "100",
                 "group.share.session.timeout.ms": "10000",
                 "group.share.min.session.timeout.ms": "1000",
                 "group.share.min.record.lock.duration.ms": "1000",
                 # KIP-1071 streams groups: the same
                 "group.streams.heartbeat.interval.ms": "500",
                 "group.streams.min.heartbeat.interval.ms": "100",
                 "group.streams.session.timeout.ms": "10000",
                 "group.streams.min.session.timeout.ms": "1000"}


def wait_until_answering(host: str, port: int, timeout: float) -> None:
    """Return once the broker at ``host:port`` answers ApiVersions; after ``timeout`` seconds
    raise the last failure (:class:`ConnectionFailed` or a protocol error)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client = BlockingClient(host, port, client_id="groupbroker-launcher",
                                    timeout=max(deadline - time.monotonic(), 0.1))
            try:
                client.negotiate()
            finally:
                client.close()
            return
        except (ConnectionFailed, ProtocolError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class BrokerProcess:
    def __init__(self, data_dir, log_path, overrides: dict | None = None, *,
                 python: str = sys.executable, host: str = "127.0.0.1", repo: Path = REPO,
                 nodes: int = 1):
        self.data_dir, self.log_path = Path(data_dir), Path(log_path)
        self.repo = repo                 # the checkout whose broker runs (benchmarks compare two)
        self.overrides = kafka_props(overrides or {})
        self.python, self.host, self.nodes = python, host, nodes
        self.port: int | None = None
        self.ports: list[int] = []                # every node's, node 0 first
        self.proc: subprocess.Popen | None = None
        self.stdout_line: str | None = None
        self.starts = 0

    # --- lifecycle -------------------------------------------------------------------------
    def start(self, port: int = 0, timeout: float = 20.0, *, loaded: bool = True) -> BrokerProcess:
        """Start it; returns once it answers and, if ``loaded``, once every coordinator shard
        has loaded (raises RuntimeError, with its log, if it does not). With ``loaded=False`` it
        returns as soon as the broker answers: group requests may then get
        COORDINATOR_LOAD_IN_PROGRESS, which clients retry."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        cmd = [self.python, "-m", "broker", "serve", "--host", self.host, "--port", str(port),
               "--data-dir", str(self.data_dir)]
        if self.nodes != 1:
            cmd += ["--nodes", str(self.nodes)]
        for key, value in self.overrides.items():
            cmd += ["-o", f"{key}={value}"]
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"=== start #{self.starts}: {' '.join(cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, cwd=self.repo, stdout=subprocess.PIPE, stderr=log,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        line = _read_line(self.proc, timeout)
        match = LISTENING.match(line.rstrip("\n"))
        if not match:
            self.kill()
            raise RuntimeError(f"broker did not start: stdout {line!r}; log:\n{self.log_text()[-3000:]}")
        self.stdout_line = line
        self.ports = [int(address.rpartition(":")[2]) for address in match.group(1).split(",")]
        self.port = self.ports[0]
        try:
            wait_until_answering(self.host, self.port, max(deadline - time.monotonic(), 1.0))
            if loaded:
                self._wait_until_loaded(deadline)
        except (ConnectionFailed, ProtocolError) as e:
            self.kill()
            raise RuntimeError(f"broker does not answer: {e}; log:\n{self.log_text()[-3000:]}") from None
        except BaseException:                # anything else (a bug, ^C): leave no broker behind
            self.kill()
            raise
        return self

    def _wait_until_loaded(self, deadline: float) -> None:
        while not SHARDS_LOADED.search(self.log_since_start()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"broker did not load its shards: log:\n{self.log_text()[-3000:]}")
            time.sleep(0.02)

    @property
    def bootstrap(self) -> str:
        """Every node's address (clients take the list as bootstrap servers)."""
        return ",".join(f"{self.host}:{port}" for port in self.ports)

    def bootstrap_for(self, listener: str) -> str:
        """Every node's address on the listener named ``listener`` (e.g. ``SASL_SSL``), from the log."""
        found = [m["address"] for m in LISTENER_LINE.finditer(self.log_since_start())
                 if m["name"] == listener.upper()]
        if not found:
            raise KeyError(f"the broker logged no listener {listener}")
        return ",".join(address.replace("*", self.host, 1) for address in found)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, then wait; returns the exit code (the broker promises 0 within seconds)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"broker ignored SIGTERM for {timeout}s")
        rest = self.proc.stdout.read()
        self.proc.stdout.close()
        assert not rest, f"broker printed more than its one line on stdout: {rest!r}"
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.proc is not None and self.proc.stdout and not self.proc.stdout.closed:
            self.proc.stdout.close()

    def restart(self, same_port: bool = True, timeout: float = 20.0) -> int:
        """SIGTERM, then start again on the same data dir; returns the stop's exit code."""
        code = self.stop()
        self.start(self.port if same_port else 0, timeout)
        return code

    # --- logs -------------------------------------------------------------------------------
    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_since_start(self) -> str:
        """The log of the current (last) start only."""
        return self.log_text().rsplit("=== start #", 1)[-1]

    def wait_for_log(self, pattern: str, timeout: float = 10.0, text=None) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, text() if text else self.log_text(), re.MULTILINE)
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line matching {pattern!r} within {timeout}s; "
                                     f"log tail:\n{self.log_text()[-4000:]}")
            time.sleep(0.05)


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first stdout line, without blocking past ``timeout`` (the broker may never print)."""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    data = b""
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None and not select.select([fd], [], [], 0)[0]:
            break
        if select.select([fd], [], [], min(left, 0.1))[0]:
            chunk = os.read(fd, 1)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")
