"""The interop matrix's consumer-group lifecycle: one scenario, run the same way for every
client that runs as its own process (kcat, kafkajs, Sarama, kafka-python 2.0.2).

A client is a :class:`Client`: ``produce(topic, start, count)`` writes the values
``m<start>`` .. ``m<start+count-1>``, value ``m<i>`` to partition ``i % PARTITIONS``, and
returns once all are acknowledged; ``consume(name, group, topic)`` starts one group member
with client id ``name`` (a :class:`Member`, usually a :class:`ClientProcess`).

:func:`run_lifecycle`: three members join, the topic gets records, together they consume and
commit everything; a 4th joins and the group rebalances to 2+2+1+1; more records; one member
leaves with a LeaveGroup; more records; the committed offsets read back with ``groupbroker
groups describe`` equal what was consumed and the log end; the rest leave, the group is Empty.

The coordinator's view (DescribeGroups, OffsetFetch, ListOffsets) is read over the wire with
the ``groupbroker groups`` code, so what the clients do is checked against what the broker
recorded: every record produced while the group is stable must be read by the member the
coordinator assigned its partition to. Each membership change happens while the group is idle
(everything consumed and committed), so no record may be delivered twice: the checks are
exact, not at-least-once.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from kafka_client.admin import (Cluster, Connection, describe_group, fetch_offsets,
                               find_coordinator, list_offsets, parse_address)
from tests.support.processes import REPO, state_changes, wait_until

PARTITIONS = 6
PER_PHASE = 600
RECORD = re.compile(r"^(\d+) (\d+) (\S*)$")


class Member(Protocol):
    name: str

    def records(self) -> list[tuple[int, int, str | None]]:
        """Every record it delivered so far: (partition, offset, value or None if unknown)."""

    def leave(self) -> int:
        """Stop it cleanly (the client sends LeaveGroup); its exit code."""

    def close(self) -> None:
        """Make sure it is gone, whatever its state (for finally blocks)."""

    def log_tail(self) -> str:
        """The end of its own log, for failure messages."""


@dataclass
class Client:
    name: str
    produce: Callable[[str, int, int], None]
    consume: Callable[[str, str, str], Member]


class ClientProcess:
    """A group member in its own process that prints each record it delivers as a line
    ``partition offset value`` on stdout and sends its log to ``log_path``; SIGTERM makes it
    leave the group and exit."""

    def __init__(self, name: str, cmd: list[str], log_path: Path, env: dict | None = None):
        self.name, self.log_path = name, Path(log_path)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log,
                                     stdin=subprocess.DEVNULL, env=env)
        self._records: list[tuple[int, int, str]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            found = RECORD.match(line.decode(errors="replace").rstrip("\n"))
            if found:
                with self._lock:
                    self._records.append((int(found[1]), int(found[2]), found[3]))

    def records(self) -> list[tuple[int, int, str]]:
        with self._lock:
            return list(self._records)

    def leave(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def close(self) -> None:
        try:
            self.leave(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._log.close()

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]


def run_parallel(commands: list[list[str]], timeout: float = 60.0, env: dict | None = None) -> None:
    """Run the commands at once; each must exit 0 within ``timeout``."""
    procs = [subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env=env) for cmd in commands]
    try:
        for cmd, proc in zip(commands, procs):
            out, _ = proc.communicate(timeout=timeout)
            assert proc.returncode == 0, (
                f"{' '.join(cmd)} exited {proc.returncode}:\n{out.decode(errors='replace')[-3000:]}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)


# --- the coordinator's view, over the wire ------------------------------------------------

class BrokerView:
    """DescribeGroups, OffsetFetch and ListOffsets for one group and topic, each call on a fresh
    connection (the ``groupbroker groups`` code, blocking)."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.address, self.group, self.topic = parse_address(bootstrap), group, topic

    def _call(self, action):
        cluster = Cluster(Connection(*self.address, client_id="lifecycle-check", timeout=10))
        try:
            return action(cluster)
        finally:
            cluster.close()

    def _coordinator(self, cluster: Cluster) -> Connection:
        _, host, port = find_coordinator(cluster, self.group)
        return cluster.connection(host, port)

    def owners(self) -> tuple[str, dict[str, set[int]]]:
        """The group's state and each member's partitions of the topic, by client id."""
        group = self._call(lambda c: describe_group(self._coordinator(c), self.group))
        owners: dict[str, set[int]] = {}
        for m in group.members:
            assert m.client_id not in owners, f"two members with client id {m.client_id}"
            owners[m.client_id] = {p for t, p in m.partitions if t == self.topic}
        return group.state, owners

    def committed(self) -> dict[int, int]:
        offsets = self._call(lambda c: fetch_offsets(self._coordinator(c), self.group))
        return {p: o for (t, p), o in offsets.items() if t == self.topic}

    def ends(self) -> dict[int, int]:
        tps = [(self.topic, p) for p in range(PARTITIONS)]
        return {p: o for (_, p), o in self._call(lambda c: list_offsets(c, tps, -1)).items()}


def create_topic(bootstrap: str, topic: str) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="lifecycle-admin")
    try:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        admin.close()


def describe_cli(bootstrap: str, group: str) -> list[dict[str, str]]:
    """``groupbroker groups describe GROUP``: one dict per table row, keyed by Kafka's columns."""
    done = subprocess.run([sys.executable, "-m", "broker", "groups", "--bootstrap-server", bootstrap,
                           "describe", group], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"groups describe failed: {done.stderr}"
    header, *rows = done.stdout.splitlines()
    return [dict(zip(header.split(), row.split())) for row in rows]


# --- the scenario -----------------------------------------------------------------------------

class Lifecycle:
    """The state of one run: the members started, the records produced, the broker's view."""

    def __init__(self, broker, client: Client):
        self.broker, self.client = broker, client
        self.topic, self.group = "lifecycle", f"lifecycle-{client.name}"
        self.view = BrokerView(broker.bootstrap, self.group, self.topic)
        self.members: dict[str, Member] = {}
        self.produced = 0

    def join(self, *names: str) -> None:
        for name in names:
            self.members[name] = self.client.consume(name, self.group, self.topic)

    def stable(self, names: list[str], timeout: float = 30.0) -> dict[str, set[int]]:
        """Wait until the coordinator says Stable with exactly these members, each owning at
        least one partition and together each partition once; their partitions."""
        def settled():
            state, owners = self.view.owners()
            owned = sorted(p for ps in owners.values() for p in ps)
            if (state == "Stable" and sorted(owners) == sorted(names) and all(owners.values())
                    and owned == list(range(PARTITIONS))):
                return owners
            return None
        return wait_until(settled, timeout, f"{names} to share {PARTITIONS} partitions", 0.1)

    def consumed(self) -> list[tuple[str, int, int, str | None]]:
        return [(m.name, *r) for m in self.members.values() for r in m.records()]

    def phase(self, owners: dict[str, set[int]], timeout: float = 30.0) -> None:
        """Produce PER_PHASE records into the stable group, wait until they are consumed and
        committed, and check: each record exactly once, by its partition's owner, the value it
        was produced with, and no state change of the group meanwhile."""
        start, changes = self.produced, len(state_changes(self.broker.log_text(), self.group))
        before = self.view.ends()
        self.client.produce(self.topic, start, PER_PHASE)
        self.produced += PER_PHASE
        ends = self.view.ends()
        assert ends == {p: self.produced // PARTITIONS for p in range(PARTITIONS)}, ends

        def done():
            seen = {(p, o) for _, p, o, _ in self.consumed()}
            return len(seen) == self.produced and self.view.committed() == ends
        wait_until(done, timeout, f"{self.produced} records consumed and committed", 0.1)

        records = self.consumed()
        twice = [r for r, n in Counter((p, o) for _, p, o, _ in records).items() if n > 1]
        assert not twice, f"records delivered more than once: {twice[:5]}"
        assert {(p, o) for _, p, o, _ in records} == {(p, o) for p in ends for o in range(ends[p])}
        values = [(p, v) for _, p, _, v in records if v is not None]
        assert not values or sorted(int(v[1:]) for _, v in values) == list(range(self.produced)), (
            "the values read are not the values produced")
        assert all(int(v[1:]) % PARTITIONS == p for p, v in values), "a value on the wrong partition"
        owner = {p: name for name, ps in owners.items() for p in ps}
        strays = [(name, p, o) for name, p, o, _ in records
                  if o >= before[p] and owner[p] != name]
        assert not strays, f"records read by a member that does not own the partition: {strays[:5]}"
        assert all(any(o >= before[p] for _, p, o, _ in records if owner[p] == name)
                   for name in owners), "a member read none of the new records"
        assert len(state_changes(self.broker.log_text(), self.group)) == changes, (
            "the group changed state while it should have been stable")

    def read_back(self) -> None:
        """The committed offsets as ``groupbroker groups describe`` prints them equal the next
        offset to consume and the log end (lag 0)."""
        consumed_to: dict[int, int] = {}
        for _, p, o, _ in self.consumed():
            consumed_to[p] = max(consumed_to.get(p, 0), o + 1)
        rows = [r for r in describe_cli(self.broker.bootstrap, self.group) if r["TOPIC"] == self.topic]
        assert sorted(int(r["PARTITION"]) for r in rows) == list(range(PARTITIONS)), rows
        committed = {int(r["PARTITION"]): int(r["CURRENT-OFFSET"]) for r in rows}
        ends = {int(r["PARTITION"]): int(r["LOG-END-OFFSET"]) for r in rows}
        assert committed == consumed_to == ends == {p: self.produced // PARTITIONS
                                                    for p in range(PARTITIONS)}
        assert {r["LAG"] for r in rows} == {"0"}

    def diagnostics(self) -> str:
        logs = [f"--- {name} log tail:\n{m.log_tail()}" for name, m in self.members.items()]
        return "\n".join([*logs, f"--- broker log tail:\n{self.broker.log_text()[-4000:]}"])


def run_lifecycle(broker, client: Client) -> None:
    """The whole scenario (see the module docstring) for one client against ``broker``."""
    run = Lifecycle(broker, client)
    create_topic(broker.bootstrap, run.topic)
    try:
        try:
            _steps(run)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{run.diagnostics()}") from None
    finally:
        for m in run.members.values():
            m.close()


def _steps(run: Lifecycle) -> None:
    # 1. three members join at once and settle at 2+2+2; they consume and commit everything
    run.join("c1", "c2", "c3")
    owners = run.stable(["c1", "c2", "c3"])
    assert sorted(len(ps) for ps in owners.values()) == [2, 2, 2]
    run.phase(owners)

    # 2. a 4th joins: the group rebalances to 2+2+1+1, and c4 reads its share
    run.join("c4")
    owners = run.stable(["c1", "c2", "c3", "c4"])
    assert sorted(len(ps) for ps in owners.values()) == [1, 1, 2, 2]
    run.phase(owners)

    # 3. c2 leaves with a LeaveGroup (not by its session expiring): the others take over
    assert run.members["c2"].leave() == 0, "c2 did not exit cleanly"
    owners = run.stable(["c1", "c3", "c4"])
    left = [c for c in state_changes(run.broker.log_text(), run.group)
            if c["reason"] == "members left the group"]
    assert left, "no LeaveGroup rebalance in the broker's log"
    run.phase(owners)

    # 4. the committed offsets read back with the groups CLI are what was consumed
    run.read_back()

    # 5. the others leave too: the group is Empty, its offsets kept
    assert [run.members[n].leave() for n in ("c1", "c3", "c4")] == [0, 0, 0]
    wait_until(lambda: run.view.owners() == ("Empty", {}), 10, "the group to become Empty", 0.1)
    assert run.view.committed() == run.view.ends()
