"""Issue 27, part 5: a group of Kafka's own Java consumers (kafka-clients 4.3.1, the classic
protocol and ``group.protocol=consumer``) on a 3-node groupbroker while a node stops under it.

``JavaFailover`` (tests/interop/clients/java-failover/src/) starts three consumers, waits until
the group has settled and every record is committed, prints that, and waits on stdin; the test
then stops a node and lets it go on: more records are written and must be consumed and committed.

* The leader case: node 2 leads two of the partitions (checked with Metadata) and not the group's
  coordinator. One of them moves away first, as a controlled shutdown moves leadership off a
  stopping Kafka broker: node 2, still up and now a follower with the newer leader epoch, answers
  its reader's fetch (which carries the older one) FENCED_LEADER_EPOCH, as Kafka's follower does;
  then node 2 stops (its connections drop) and the other one moves as after a crash. Each time
  the consumers refresh their metadata, validate their positions with the new leader
  (OffsetForLeaderEpoch) and go on reading from it. In Kafka a leader change is no membership
  change: no rebalance callback after the first assignment, the same generation (classic) or
  member epoch (consumer protocol), no JoinGroup, and nothing lost or read twice beyond the
  uncommitted window.
* The coordinator case: the node holding the group's coordinator stops; the consumers find the
  new coordinator (which loads the group from the offsets log), and a Stable group goes on
  without a rebalance, as in Kafka.

The oracle (one Apache Kafka node) cannot stop a node: it has only one, so it has no leader or
coordinator change to show. What it can show is the same program's run with nothing changed,
compared with groupbroker's (the ``oracle_twin``): that the program itself, unchanged, reads every
record once with no rebalance after the group settled; the failover runs on groupbroker are
then held to the same invariants strictly.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from tests.interop.java_driver import JVM_FLAGS, compiled
from tests.interop.test_cluster_failover import ask
from tests.support.processes import REPO, check_exactly_once, missing, wait_until

SOURCE = REPO / "tests" / "interop" / "clients" / "java-failover"
PARTITIONS, MEMBERS, PER_PARTITION = 6, 3, 10
CLIENTS = {f"c{i}" for i in range(MEMBERS)}       # the members' client.id
#: a heartbeat's answers while its coordinator moves: the client finds the coordinator again
COORDINATOR_MOVING = ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")
PROTOCOLS = ["classic", "consumer"]
#: fast joins; KIP-848 heartbeats every 300 ms (the classic members set their own)
PROPS = {"group.initial.rebalance.delay.ms": "50", "group.min.session.timeout.ms": "1000",
         "group.consumer.heartbeat.interval.ms": "300", "group.consumer.min.heartbeat.interval.ms": "100"}


@pytest.fixture(scope="module")
def classpath() -> str:
    return compiled(SOURCE, "JavaFailover")


class Program:
    """One JavaFailover JVM: ``settled()`` once its group has settled, ``resume()`` after the
    change, ``result()`` its final document."""

    def __init__(self, classpath: str, bootstrap: str, protocol: str, replication: int, log: Path):
        java = shutil.which("java")
        if java is None:
            missing("the Java client's tests need Java 17: no `java` on PATH")
        suffix = uuid.uuid4().hex[:6]
        self.topic, self.group, self.log = f"jf-{protocol}-{suffix}", f"jf-group-{protocol}-{suffix}", log
        self._err = open(log, "w")
        self.process = subprocess.Popen(
            [java, *JVM_FLAGS, f"-Dlog4j2.configurationFile={SOURCE / 'log4j2.properties'}", "-cp", classpath,
             "JavaFailover", bootstrap, self.topic, self.group, protocol, str(MEMBERS), str(PARTITIONS),
             str(replication), str(PER_PARTITION)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout: float) -> dict:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"JavaFailover said nothing for {timeout} s:\n{self.log.read_text()[-4000:]}")
        if line is None:
            self.process.wait(10)
            raise AssertionError(f"JavaFailover exited {self.process.returncode}:\n{self.log.read_text()[-6000:]}")
        return json.loads(line)

    def settled(self) -> dict:
        said = self._next(40)
        assert "settled" in said, f"JavaFailover's group never settled: {said.get('failure')}\n" \
                                  f"{self.log.read_text()[-4000:]}"
        return said["settled"]

    def resume(self, what: str) -> None:
        self.process.stdin.write(what + "\n")
        self.process.stdin.flush()

    def result(self) -> dict:
        doc = self._next(60)
        self.process.wait(15)
        self.log.with_suffix(".json").write_text(json.dumps(doc))
        return doc

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._err.close()


class Recorded:
    """A member's batches in the shape check_exactly_once reads."""

    def __init__(self, report: dict):
        self._batches = [{"records": [(p, o) for p, o, _ in b["records"]], "t": b["t"],
                          "committed": b["committed"], "consumer": report["name"], "error": b.get("error")}
                         for b in report["batches"]]

    def batches(self):
        return self._batches


def check_no_rebalance(doc: dict, where: str) -> None:
    """What must hold of any run, changed under it or not: the group settled once and stayed so
    (no callback after the settled assignment, the same generation or member epoch and member id
    to the end), and every record was committed exactly once, read twice only uncommitted."""
    assert doc.get("failure") is None, f"{where}: {doc['failure']}"
    for m in doc["members"]:
        assert m["failure"] is None, f"{where}: {m['name']} failed: {m['failure']}"
    # once the first member closes, the others may see the group change before they close in turn:
    # that is the end of the run, not a rebalance
    first_close = min(e["t"] for m in doc["members"] for e in m["events"] if e["ev"] == "closing")
    for m in doc["members"]:
        settled = doc["settled"][m["name"]]
        closing = next(i for i, e in enumerate(m["events"]) if e["ev"] == "closing")
        later = [e for e in m["events"][settled["events_seen"]:closing] if e["t"] < first_close]
        assert later == [], f"{where}: {m['name']} rebalanced after the group settled: {later}"
        end = doc["end"][m["name"]]
        assert (end["generation"], end["member_id"], end["assignment"]) == \
               (settled["generation"], settled["member_id"], settled["assignment"]), (where, settled, end)
        changes = [i for i in m["identities"][settled["identities_seen"]:] if i[2] < first_close]
        assert changes == [], f"{where}: {m['name']}'s generation or member id changed: {changes}"
    produced = {tuple(r) for r in doc["produced"]}
    assert len(produced) == 2 * PER_PARTITION * PARTITIONS
    check_exactly_once(produced, [Recorded(m) for m in doc["members"]])
    assert {p: o for p, (o, _) in doc["committed"].items()} == {str(p): 2 * PER_PARTITION for p in range(PARTITIONS)}


def coordinator_of(broker, group: str, node: int = 0) -> int:
    """The node FindCoordinator (asked of ``node``) names for ``group``."""
    answer = ask(broker, ApiKey.FIND_COORDINATOR, 3, node=node, key=group)
    assert answer.error_code == 0, answer
    return answer.node_id


def partition_leaders(broker, topic: str) -> dict[int, tuple[int, int]]:
    """Each partition's (leader, leader epoch) as Metadata tells it."""
    answer = ask(broker, ApiKey.METADATA, 12, topics=(REQUESTS[ApiKey.METADATA].cls.MetadataRequestTopic(name=topic),))
    return {p.partition_index: (p.leader_id, p.leader_epoch) for p in answer.topics[0].partitions}


def after_change(doc: dict) -> dict[int, set[int]]:
    """The leader epochs of the records each partition gave after the change."""
    epochs: dict[int, set[int]] = {}
    for m in doc["members"]:
        for b in m["batches"]:
            for p, offset, epoch in b["records"]:
                if offset >= PER_PARTITION:
                    epochs.setdefault(p, set()).add(epoch)
    return epochs


def group_requests_after_settling(broker, doc: dict, protocol: str) -> list:
    """What the members asked after the group settled (recorded since then) until the first of
    them leaves at the end (the others may rejoin then), checked to be no rebalance: no
    JoinGroup or SyncGroup, and every heartbeat answered in the settled generation or member
    epoch (or refused while the coordinator moves, which the client retries elsewhere, no
    rebalance either)."""
    recorded = [r for r in broker.recorded() if r.client_id in CLIENTS]
    end = next((i for i, r in enumerate(recorded) if r.api == "LeaveGroup"
                or (r.api == "ConsumerGroupHeartbeat" and r.member_epoch == -1)), len(recorded))
    recorded = recorded[:end]
    assert not [r for r in recorded if r.api in ("JoinGroup", "SyncGroup")], \
        [(r.api, r.client_id, r.error) for r in recorded if r.api in ("JoinGroup", "SyncGroup")]
    epochs = {s["generation"] for s in doc["settled"].values()}
    beats = []
    for r in recorded:
        if r.api in ("Heartbeat", "ConsumerGroupHeartbeat"):
            beats.append(r)
            answered = r.generation if protocol == "classic" else r.answered_member_epoch
            assert r.error in COORDINATOR_MOVING or (r.error == "NONE" and answered in epochs), (r, epochs)
    assert beats, "no heartbeat recorded after the group settled"
    return recorded


@pytest.mark.groupbroker(props=PROPS, nodes=3)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_leader_change_without_rebalance(groupbroker, classpath, protocol, tmp_path):
    """Node 2's partitions get new leaders, one by a controlled move, one by node 2 stopping:
    the consumers follow each to its new leader, with no rebalance."""
    program = Program(classpath, groupbroker.bootstrap_servers, protocol, 3, tmp_path / "client.log")
    try:
        if coordinator_of(groupbroker, program.group) == 2:       # this case is the leaders' alone
            groupbroker.faults.move_coordinator(group=program.group, node=0)
        coordinator = coordinator_of(groupbroker, program.group)
        settled = program.settled()
        groupbroker.recorded(clear=True)
        before = partition_leaders(groupbroker, program.topic)
        moved = sorted(p for p, (leader, _) in before.items() if leader == 2)
        assert len(moved) == 2, f"node 2 does not lead two of {before}"
        owner = next(name for name, s in settled.items() if moved[0] in s["assignment"])
        wait_until(lambda: any(r.api == "Fetch" and r.node == 2 and r.client_id == owner and r.error == "NONE"
                               for r in groupbroker.recorded()), 10, f"{owner} to fetch from node 2")
        groupbroker.faults.move_leader(topic=program.topic, partition=moved[0], node=1)
        refused = wait_until(lambda: [r for r in groupbroker.recorded() if r.api == "Fetch" and r.node == 2
                                      and r.client_id in CLIENTS
                                      and r.error == "FENCED_LEADER_EPOCH"],
                             10, f"node 2 to refuse a fetch of partition {moved[0]}")
        groupbroker.faults.stop_node(node=2)
        after = partition_leaders(groupbroker, program.topic)
        program.resume("node 2 stopped")
        doc = program.result()
    finally:
        program.close()
    check_no_rebalance(doc, f"groupbroker, {protocol}, node 2 stopped")
    recorded = group_requests_after_settling(groupbroker, doc, protocol)
    assert coordinator_of(groupbroker, program.group) == coordinator
    for p in moved:
        assert after[p][0] in (0, 1) and after[p][1] > before[p][1], (p, before[p], after[p])
    # each moved partition's reader validated its position with the new leader
    validated = {r.node for r in recorded if r.api == "OffsetForLeaderEpoch" and r.error == "NONE"}
    assert {after[p][0] for p in moved} <= validated, (refused[:3], validated)
    # the records written after the stop came from each partition's leader at the time, and the
    # commits carry that leader epoch: the consumers followed the moved partitions to their new leader
    assert after_change(doc) == {p: {epoch} for p, (_, epoch) in after.items()}
    assert {int(p): e for p, (_, e) in doc["committed"].items()} == {p: epoch for p, (_, epoch) in after.items()}


@pytest.mark.groupbroker(props=PROPS, nodes=3)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_coordinator_node_stops_without_rebalance(groupbroker, classpath, protocol, tmp_path):
    """The node of the group's coordinator stops: the consumers find the new one, the Stable
    group goes on with the same generation or member epochs."""
    program = Program(classpath, groupbroker.bootstrap_servers, protocol, 3, tmp_path / "client.log")
    try:
        program.settled()
        groupbroker.recorded(clear=True)
        coordinator = coordinator_of(groupbroker, program.group)
        groupbroker.faults.stop_node(node=coordinator)
        program.resume(f"node {coordinator} stopped")
        doc = program.result()
    finally:
        program.close()
    check_no_rebalance(doc, f"groupbroker, {protocol}, coordinator's node {coordinator} stopped")
    recorded = group_requests_after_settling(groupbroker, doc, protocol)
    new = coordinator_of(groupbroker, program.group, node=(coordinator + 1) % 3)
    assert new != coordinator
    # every member asked for the coordinator again and heartbeated to the new one
    assert {r.client_id for r in recorded if r.api == "FindCoordinator" and r.error == "NONE"} == CLIENTS
    beat = "Heartbeat" if protocol == "classic" else "ConsumerGroupHeartbeat"
    assert {r.client_id for r in recorded if r.api == beat and r.node == new} == CLIENTS


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_same_program_unchanged_on_kafka_and_groupbroker(classpath, oracle_twin, kafka_oracle, protocol, tmp_path):
    """What the single-node oracle can show: the same program with nothing changed, on both."""
    def run(bootstrap: str, name: str) -> dict:
        program = Program(classpath, bootstrap, protocol, 1, tmp_path / f"{name}-client.log")
        try:
            settled = program.settled()
            program.resume("nothing changed")
            doc = program.result()
        finally:
            program.close()
        assert doc["settled"] == settled
        check_no_rebalance(doc, f"{name}, {protocol}, nothing changed")
        return doc

    with ThreadPoolExecutor(2) as pool:
        ours = pool.submit(run, oracle_twin.bootstrap, "groupbroker")
        theirs = pool.submit(run, kafka_oracle.bootstrap_servers, "kafka")
        ours, theirs = ours.result(), theirs.result()

    def shape(doc: dict) -> dict:
        """What two brokers must agree on (beyond check_no_rebalance, held by each run): each
        member's share of the partitions, the leader epochs the records and the commits carry,
        and the committed offsets. How the group got there (which member first held what, how
        many generations) depends on when each member joined, so it is not compared."""
        return {"shares": sorted(len(s["assignment"]) for s in doc["settled"].values()),
                "record_epochs": sorted({e for m in doc["members"] for b in m["batches"] for *_, e in b["records"]}),
                "committed": doc["committed"]}
    assert shape(ours) == shape(theirs)
