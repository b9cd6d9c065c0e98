"""Issue 27, part 3: Kafka Connect 4.3.1 in distributed mode against groupbroker and against Apache
Kafka 4.3.1 itself, the same cluster of workers on both at once, and what it observed compared.

Each side runs three workers, separate JVMs (``ConnectDistributed`` with Kafka's jars; shared
settings in ``clients/connect/worker.properties``, sessioned protocol, a short
``scheduled.rebalance.max.delay.ms``), with a FileStreamSource connector (file to topic, which
Connect creates with four partitions) and a FileStreamSink connector (topic to file, four tasks).
What a broker must give Connect: a group of protocol type "connect" whose assignments Connect
writes itself, its three compacted internal topics read to their end, and for the connectors'
own clients the usual produce, consume and commit.

The scenario, its stages observed through the workers' REST API, times relative to each stop:

* formed: w1 starts first (it leads the group), then w2 and w3; the connectors and their tasks
  are spread over the three, the lines of a first batch reach the output file exactly once;
* killed: w3 is killed (SIGKILL); its connectors and tasks stay with it (its last status) until
  its session ends and the leader's delay has passed, then move to w1 and w2;
* returned: w2 is stopped (SIGTERM: it stops its tasks and leaves the group) and started again
  within the delay, as w2b: when the delay ends w2b gets exactly w2's connectors and tasks, and
  w1 keeps its own. w2b listens on a new port, so it is a new worker id: a stopped worker's
  status entries may stay RUNNING under its id (Connect writes UNASSIGNED for some of them only,
  on either broker), and only a new id tells through REST a status its new run wrote. Connect's
  assignor hands lost work to whichever empty worker joined during the delay, so which id it
  comes back under makes no difference to the group.

Before each stop the pipeline is quiet (every line in the output, the source's offset at the end
of its file, the sink's offsets at the end of the topic), so each line comes out exactly once.
Each run is checked on its own, then the two are compared: the group as DescribeGroups shows it,
the internal topics' configs, the assignment sizes of each stage and the timings (within
TIMING_SLACK seconds)."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kafka_client.admin import (LATEST, Cluster, Connection, find_coordinator, list_offsets, metadata, parse_address,
                                topic_partitions)
from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from tests.interop.java_driver import all_jars, assert_same
from tests.support.processes import missing, wait_until

SOURCE = Path(__file__).resolve().parent / "clients" / "connect"
#: Connect's JVMs: small and quick to start, six or seven of them at once on 2 cores
JVM_FLAGS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
SHARED = (SOURCE / "worker.properties").read_text()


def setting(name: str) -> int:
    """A number from worker.properties (the test's expectations follow the workers' settings)."""
    for line in SHARED.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            return int(value)
    raise KeyError(name)


DELAY = setting("scheduled.rebalance.max.delay.ms") / 1000
SESSION = setting("session.timeout.ms") / 1000
PARTITIONS = SINK_TASKS = 4
LINES = 200                      # per batch
TIMING_SLACK = 3.0               # seconds between the two brokers' timings
LATE = 8.0                       # seconds a move may take after it became due (JVMs on 2 busy cores)
CONNECTORS = ("source", "sink")
ITEMS = ("source", "source-0", "sink", *(f"sink-{i}" for i in range(SINK_TASKS)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- a worker, and its REST API ------------------------------------------------------------------

class Worker:
    """One Connect worker JVM; its REST listener on ``port`` of 127.0.0.1, which is also its
    worker id (host:port) in statuses and the group."""

    def __init__(self, role: str, port: int, properties: Path, work: Path, classpath: str):
        self.role, self.port, self.properties, self.work, self.classpath = role, port, properties, work, classpath
        self.proc: subprocess.Popen | None = None
        self.runs = 0

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        java = shutil.which("java")
        if java is None:
            missing("Kafka Connect's tests need Java 17: no `java` on PATH")
        self.runs += 1
        name = f"{self.role}-{self.runs}"
        self.log = self.work / f"{name}.log"
        tmp = self.work / f"{name}-tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        with open(self.work / f"{name}.out", "w") as out:
            self.proc = subprocess.Popen(
                [java, *JVM_FLAGS, f"-Djava.io.tmpdir={tmp}", f"-Dconnect.log={self.log}",
                 f"-Dlog4j2.configurationFile={SOURCE / 'log4j2.properties'}", "-cp", self.classpath, MAIN,
                 str(self.properties)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            log = self.log.read_text()[-4000:] if self.log.exists() else ""
            raise AssertionError(f"worker {self.role} exited {self.proc.returncode}:\n{log}")

    def rest(self, method: str, path: str, body=None, timeout: float = 10):
        """(HTTP status, decoded JSON body) of one REST call; (0, error) if nothing answered."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                text = answer.read()
                return answer.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read()
            try:
                return e.code, json.loads(text) if text else None
            except ValueError:
                return e.code, text.decode(errors="replace")
        except (urllib.error.URLError, OSError) as e:
            return 0, str(e)

    def healthy(self) -> bool:
        self.check_alive()
        return self.rest("GET", "/health", timeout=5)[0] == 200

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM: Connect stops its connectors and tasks and leaves the group."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"worker {self.role} did not stop within {timeout} s of SIGTERM") from None


# --- the broker's side: DescribeGroups and DescribeConfigs -----------------------------------------

def _string(data: bytes, at: int) -> tuple[str, int]:
    n = struct.unpack_from(">h", data, at)[0]
    return data[at + 2:at + 2 + n].decode(), at + 2 + n


def worker_url(metadata_bytes: bytes) -> str:
    """The REST URL in a worker's JoinGroup metadata (Connect's format: a version, then the url)."""
    return _string(metadata_bytes, 2)[0]


def leader_url(assignment: bytes) -> str | None:
    """The leader's REST URL in a worker's assignment (a version, an error code, the leader's
    member id, then its url); None for a member without an assignment yet."""
    if not assignment:
        return None
    _, at = _string(assignment, 4)
    return _string(assignment, at)[0]


def describe_group(bootstrap: str, group: str, roles: dict[str, str]) -> dict:
    """The workers' group as DescribeGroups shows it, members and leader named by role."""
    cls = REQUESTS[ApiKey.DESCRIBE_GROUPS].cls
    cluster = Cluster(Connection(*parse_address(bootstrap.split(",")[0])))
    try:
        metadata(cluster, [])
        node = cluster.node(find_coordinator(cluster, group)[0])
        described = node.call(ApiKey.DESCRIBE_GROUPS, lambda v: cls(groups=(group,))).groups[0]
    finally:
        cluster.close()
    urls = [worker_url(m.member_metadata) for m in described.members]
    leaders = {leader_url(m.member_assignment) for m in described.members}
    role = {f"http://{worker_id}/": r for worker_id, r in roles.items()}
    return {"error": described.error_code, "state": described.group_state,
            "protocol_type": described.protocol_type, "protocol": described.protocol_data,
            "members": sorted(role.get(u, u) for u in urls),
            "leader": sorted(role.get(u, u) if u else None for u in leaders)}


def topic_configs(bootstrap: str, topics: list[str]) -> dict:
    """Each topic's partition count and the configs set on it (DescribeConfigs: those whose source
    is the topic itself), as the broker describes them."""
    cls = REQUESTS[ApiKey.DESCRIBE_CONFIGS].cls
    resource = REQUESTS[ApiKey.DESCRIBE_CONFIGS].class_of("DescribeConfigsResource")
    conn = Connection(*parse_address(bootstrap.split(",")[0]))
    cluster = Cluster(conn)
    try:
        answer = metadata(cluster, topics)
        partitions = {t.name: len(t.partitions) for t in answer.topics}
        described = conn.call(ApiKey.DESCRIBE_CONFIGS, lambda v: cls(resources=tuple(
            resource(resource_type=2, resource_name=t, configuration_keys=None) for t in topics)))
    finally:
        cluster.close()
    out = {}
    for result in described.results:
        assert result.error_code == 0, f"DescribeConfigs {result.resource_name}: {result.error_code} {result.error_message}"
        out[result.resource_name] = {"partitions": partitions.get(result.resource_name),
                                     "set": {c.name: c.value for c in result.configs if c.config_source == 1}}
    return out


def topic_ends(bootstrap: str, topic: str) -> dict[int, int]:
    cluster = Cluster(Connection(*parse_address(bootstrap.split(",")[0])))
    try:
        metadata(cluster, [topic])
        ends = list_offsets(cluster, topic_partitions(cluster, topic), LATEST)
    finally:
        cluster.close()
    return {p: o for (_, p), o in ends.items()}


# --- one Connect cluster against one broker ---------------------------------------------------------

class ConnectCluster:
    """Three workers (and w2b, w2's return) against the broker at ``bootstrap``, their files under
    ``work``; ``run()`` plays the scenario and returns what was observed."""

    def __init__(self, broker: str, bootstrap: str, work: Path, prefix: str, classpath: str):
        self.broker, self.bootstrap, self.work, self.prefix = broker, bootstrap, work, prefix
        work.mkdir(parents=True, exist_ok=True)
        self.group = f"{prefix}-workers"
        self.internal = [f"{prefix}-configs", f"{prefix}-offsets", f"{prefix}-status"]
        self.topic = f"{prefix}-lines"
        self.input, self.output = work / "in.txt", work / "out.txt"
        self.input.write_text("")
        own = (f"bootstrap.servers={bootstrap}\ngroup.id={self.group}\nconfig.storage.topic={self.internal[0]}\n"
               f"offset.storage.topic={self.internal[1]}\nstatus.storage.topic={self.internal[2]}\n")
        self.workers: dict[str, Worker] = {}
        for role in ("w1", "w2", "w3", "w2b"):
            port = free_port()
            props = work / f"{role}.properties"
            props.write_text(SHARED + own + f"listeners=http://127.0.0.1:{port}\nrest.advertised.host.name=127.0.0.1\n"
                             f"rest.advertised.port={port}\n")
            self.workers[role] = Worker(role, port, props, work, classpath)
        self.roles = {w.worker_id: role for role, w in self.workers.items()}
        self.written: list[str] = []

    def name(self, connector: str) -> str:
        return f"{self.prefix}-{connector}"

    # -- what the REST API shows

    def placement(self) -> dict[str, tuple[str, str]]:
        """item -> (state, role of the worker the status names), as w1 (never stopped) sees it."""
        code, body = self.workers["w1"].rest("GET", "/connectors?expand=status")
        assert code == 200, f"{self.broker}: GET /connectors?expand=status: {code} {body}"
        items = {}
        for short in CONNECTORS:
            entry = body.get(self.name(short))
            if entry is None:
                continue
            status = entry["status"]
            items[short] = (status["connector"]["state"], self.roles.get(status["connector"]["worker_id"], "?"))
            for task in status["tasks"]:
                items[f"{short}-{task['id']}"] = (task["state"], self.roles.get(task["worker_id"], "?"))
        return items

    def running(self, on: set[str], items: dict | None = None) -> dict[str, list[str]] | None:
        """Each worker's items once every connector and task runs, and on a worker of ``on``
        (``items``: a placement already read, so that a timeline and its verdict agree)."""
        items = self.placement() if items is None else items
        if set(items) != set(ITEMS) or any(state != "RUNNING" or role not in on for state, role in items.values()):
            return None
        held: dict[str, list[str]] = {role: [] for role in sorted(on)}
        for item, (_, role) in sorted(items.items()):
            held[role].append(item)
        return held

    def alive(self, *roles: str) -> None:
        for role in roles:
            self.workers[role].check_alive()

    # -- the pipeline

    def write_batch(self, n: int) -> None:
        lines = [f"batch{n}-line{i:04d}" for i in range(LINES)]
        with open(self.input, "a") as f:
            f.write("".join(line + "\n" for line in lines))
        self.written += lines

    def quiet(self, live: tuple[str, ...]) -> dict:
        """Wait until every line written so far is in the output file, the source's offset is at
        the end of the input and the sink's committed offsets at the end of the topic; what the
        REST API then says of the offsets."""
        size = self.input.stat().st_size

        def settled():
            self.alive(*live)
            out = self.output.read_text().splitlines() if self.output.exists() else []
            if len(out) < len(self.written):
                return None
            code, source = self.workers["w1"].rest("GET", f"/connectors/{self.name('source')}/offsets")
            code2, sink = self.workers["w1"].rest("GET", f"/connectors/{self.name('sink')}/offsets")
            if code != 200 or code2 != 200:
                return None
            positions = [o["offset"].get("position") for o in source["offsets"]]
            committed = {o["partition"]["kafka_partition"]: o["offset"]["kafka_offset"] for o in sink["offsets"]}
            if positions != [size] or sum(committed.values()) < len(self.written):
                return None
            return {"out": out, "source_positions": positions, "sink_committed": committed}
        seen = wait_until(settled, 60, f"{self.broker}: {len(self.written)} lines through the pipeline",
                          interval=0.3)
        assert sorted(seen["out"]) == sorted(self.written), (
            f"{self.broker}: the output is not the input exactly once: {len(seen['out'])} lines for "
            f"{len(self.written)}, missing {sorted(set(self.written) - set(seen['out']))[:5]}, "
            f"extra {sorted(set(seen['out']) - set(self.written))[:5]}")
        ends = topic_ends(self.bootstrap, self.topic)
        committed = {p: o for p, o in seen["sink_committed"].items() if o}     # a task may commit 0 where nothing came
        assert committed == {p: o for p, o in ends.items() if o}, f"{self.broker}: the sink committed {committed}, ends {ends}"
        return {"lines": len(seen["out"]), "records": sum(ends.values()), "source_position": size,
                "partitions_with_records": sum(1 for o in ends.values() if o > 0)}

    def put_connector(self, short: str, config: dict) -> None:
        def created():
            code, body = self.workers["w1"].rest("PUT", f"/connectors/{self.name(short)}/config", config)
            assert code in (200, 201, 409, 503), f"{self.broker}: PUT {short}: {code} {body}"
            return code in (200, 201)          # 409: a rebalance under way; asked again
        wait_until(created, 30, f"{self.broker}: connector {short} created", interval=0.5)

    # -- the scenario

    def run(self) -> dict:
        self.doc = doc = {}          # kept as it grows: the test writes it out even after a failure
        w = self.workers
        began = time.monotonic()
        w["w1"].start()
        wait_until(w["w1"].healthy, 90, f"{self.broker}: w1 healthy", interval=0.25)
        w["w2"].start()
        w["w3"].start()
        wait_until(lambda: w["w2"].healthy() and w["w3"].healthy(), 90, f"{self.broker}: w2, w3 healthy",
                   interval=0.25)
        doc["startup_s"] = round(time.monotonic() - began, 1)
        doc["group"] = wait_until(lambda: (
            lambda g: g if g["state"] == "Stable" and len(g["members"]) == 3 else None)(
            describe_group(self.bootstrap, self.group, self.roles)), 30,
            f"{self.broker}: three workers in a stable group", interval=0.2)
        doc["internal_topics"] = topic_configs(self.bootstrap, self.internal)

        # formed: source first (it creates the topic when it sends its first line), then the sink
        self.write_batch(1)
        self.put_connector("source", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
            "file": str(self.input), "topic": self.topic,
            "topic.creation.default.partitions": str(PARTITIONS), "topic.creation.default.replication.factor": "1"})
        doc["active_topics"] = wait_until(lambda: (
            lambda r: r[1] if r[0] == 200 and r[1][self.name("source")]["topics"] else None)(
            w["w1"].rest("GET", f"/connectors/{self.name('source')}/topics")), 30,
            f"{self.broker}: the source's topic", interval=0.2)
        self.put_connector("sink", {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": str(SINK_TASKS), "file": str(self.output), "topics": self.topic})
        formed = wait_until(lambda: self.alive("w1", "w2", "w3") or self.running({"w1", "w2", "w3"}), 60,
                            f"{self.broker}: every connector and task running", interval=0.2)
        doc["formed"] = {"held": formed, "flow": self.quiet(("w1", "w2", "w3"))}
        doc["topic"] = topic_configs(self.bootstrap, [self.topic])

        # killed: w3 dies; its items keep its last status until the session and the delay are over
        before = formed
        t0 = time.monotonic()
        w["w3"].kill()
        timeline = []

        def moved():
            self.alive("w1", "w2")
            items = self.placement()
            timeline.append([round(time.monotonic() - t0, 2), {k: list(v) for k, v in items.items()}])
            return self.running({"w1", "w2"}, items)
        after_kill = wait_until(moved, SESSION + DELAY + 30, f"{self.broker}: w3's items on w1 and w2", interval=0.2)
        moved_after = time.monotonic() - t0
        early = [t for t, items in timeline if any(items.get(i, ["", ""])[1] in ("w1", "w2") and
                                                   items[i][0] == "RUNNING" for i in before["w3"])]
        doc["killed"] = {"held": after_kill, "w3_held": before["w3"], "moved_after_s": round(moved_after, 2),
                         "first_seen_elsewhere_s": early[0] if early else None, "timeline": timeline}
        self.write_batch(2)
        doc["killed"]["flow"] = self.quiet(("w1", "w2"))

        # returned: w2 stops, and comes back as w2b within the delay
        before = after_kill
        t0 = time.monotonic()
        w["w2"].stop()
        stopped_after = time.monotonic() - t0
        w["w2b"].start()
        timeline, healthy_after = [], []

        def back():
            self.alive("w1", "w2b")
            if not healthy_after and w["w2b"].healthy():
                healthy_after.append(round(time.monotonic() - t0, 2))
            items = self.placement()
            timeline.append([round(time.monotonic() - t0, 2), {k: list(v) for k, v in items.items()}])
            return self.running({"w1", "w2b"}, items)
        after_return = wait_until(back, DELAY + 60, f"{self.broker}: w2's items on w2b", interval=0.2)
        back_after = time.monotonic() - t0
        early = [t for t, items in timeline if any(items.get(i, ["", ""])[1] in ("w1", "w2b") and
                                                   items[i][0] == "RUNNING" for i in before["w2"])]
        doc["returned"] = {"held": after_return, "w2_held": before["w2"], "back_after_s": round(back_after, 2),
                           "stopped_after_s": round(stopped_after, 2),
                           "w2b_healthy_after_s": healthy_after[0] if healthy_after else None,
                           "first_seen_elsewhere_s": early[0] if early else None, "timeline": timeline}
        self.write_batch(3)
        doc["returned"]["flow"] = self.quiet(("w1", "w2b"))
        doc["group_after"] = describe_group(self.bootstrap, self.group, self.roles)
        doc["internal_topics_after"] = topic_configs(self.bootstrap, self.internal)
        doc["total_s"] = round(time.monotonic() - began, 1)
        return doc

    def close(self) -> None:
        for worker in self.workers.values():
            if worker.alive():
                worker.proc.kill()
                worker.proc.wait()


# --- what one run must hold on its own ----------------------------------------------------------

def sizes(held: dict[str, list[str]]) -> dict[str, list[int]]:
    """How many connectors and how many tasks each worker holds, sorted (which worker holds which
    follows the members' order, random on both brokers)."""
    return {"connectors": sorted(sum(1 for i in items if "-" not in i) for items in held.values()),
            "tasks": sorted(sum(1 for i in items if "-" in i) for items in held.values())}


def check_run(doc: dict, broker: str, prefix: str) -> None:
    group = doc["group"]
    assert group["protocol_type"] == "connect" and group["protocol"] == "sessioned", f"{broker}: {group}"
    assert group["members"] == ["w1", "w2", "w3"] and group["leader"] == ["w1"], f"{broker}: {group}"
    for name, described in doc["internal_topics"].items():
        assert described["set"].get("cleanup.policy") == "compact", f"{broker}: {name} is not compacted: {described}"
    assert doc["internal_topics"][f"{prefix}-configs"]["partitions"] == 1       # as Connect requires
    assert doc["internal_topics"][f"{prefix}-offsets"]["partitions"] == setting("offset.storage.partitions")
    assert doc["internal_topics"][f"{prefix}-status"]["partitions"] == setting("status.storage.partitions")
    assert doc["topic"][f"{prefix}-lines"]["partitions"] == PARTITIONS, f"{broker}: {doc['topic']}"

    formed = doc["formed"]["held"]
    assert all(any("-" in i for i in items) for items in formed.values()), f"{broker}: a worker has no task: {formed}"
    assert sizes(formed) == {"connectors": [0, 1, 1], "tasks": [1, 2, 2]}, f"{broker}: unbalanced: {formed}"

    killed = doc["killed"]
    held = killed["held"]
    for role in ("w1", "w2"):        # no revocation: w1 and w2 kept theirs and took w3's
        assert set(formed[role]) <= set(held[role]), f"{broker}: {role} lost items: {formed} -> {held}"
    assert sizes(held) == {"connectors": [1, 1], "tasks": [2, 3]}, f"{broker}: unbalanced after the kill: {held}"
    # w3's items waited for its session to end and for the delay
    assert killed["first_seen_elsewhere_s"] >= DELAY, f"{broker}: w3's items moved before the delay: {killed}"
    assert DELAY <= killed["moved_after_s"] <= SESSION + DELAY + LATE, (
        f"{broker}: w3's items moved {killed['moved_after_s']} s after the kill (delay {DELAY} s, session {SESSION} s)")

    # incremental: while lost work waits, the survivors' connectors and tasks keep running where they are
    for stage, previous, survivors in (("killed", formed, ("w1", "w2")), ("returned", held, ("w1",))):
        for t, items in doc[stage]["timeline"]:
            for role in survivors:
                for item in previous[role]:
                    assert items.get(item) == ["RUNNING", role], (
                        f"{broker}, {stage}, {t} s after the stop: {role}'s {item} is {items.get(item)}")

    returned = doc["returned"]
    joined = returned["w2b_healthy_after_s"]
    assert returned["held"]["w2b"] == returned["w2_held"], (
        f"{broker}: w2b (healthy {joined} s after w2's stop; the delay is {DELAY} s) did not get w2's items: "
        f"{returned['held']}, w2 held {returned['w2_held']}")
    assert returned["held"]["w1"] == held["w1"], f"{broker}: w1's items changed: {held} -> {returned['held']}"
    assert returned["first_seen_elsewhere_s"] >= DELAY, f"{broker}: w2's items moved before the delay: {returned}"
    assert DELAY <= returned["back_after_s"] <= DELAY + returned["stopped_after_s"] + LATE, (
        f"{broker}: w2's items came back {returned['back_after_s']} s after the stop (delay {DELAY} s)")
    assert returned["flow"]["lines"] == 3 * LINES and returned["flow"]["records"] == 3 * LINES, f"{broker}: {returned}"
    assert doc["group_after"]["members"] == ["w1", "w2b"] and doc["group_after"]["leader"] == ["w1"], (
        f"{broker}: {doc['group_after']}")
    assert doc["internal_topics_after"] == doc["internal_topics"], f"{broker}: the internal topics' configs changed"


def waiting(stage: dict) -> list:
    """The statuses a stopped worker's connectors and tasks showed before they moved."""
    lost = stage["w3_held"]
    return sorted({tuple(items[i]) for t, items in stage["timeline"] for i in lost if t < stage["first_seen_elsewhere_s"]})


def shape(doc: dict) -> dict:
    """What both brokers must agree on exactly."""
    return {"group": doc["group"], "group_after": doc["group_after"],
            "internal_topics": {k.split("-")[-1]: v for k, v in doc["internal_topics"].items()},
            "topic": list(doc["topic"].values()),
            "active_topics": {k.split("-")[-1]: [t.split("-")[-1] for t in v["topics"]]
                              for k, v in doc["active_topics"].items()},
            "formed": sizes(doc["formed"]["held"]), "killed": sizes(doc["killed"]["held"]),
            "killed_waiting": waiting(doc["killed"]),
            "returned": sizes(doc["returned"]["held"]),
            "flows": [{k: v for k, v in doc[s]["flow"].items() if k != "partitions_with_records"}
                      for s in ("formed", "killed", "returned")]}


# --- the test -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def connect_classpath() -> str:
    jars = all_jars()
    for needed in ("connect-runtime-", "connect-file-"):
        if not any(j.name.startswith(needed) for j in jars):
            missing(f"{needed}*.jar is not in {jars[0].parent} (python -m apache_kafka fills it)")
    return str(jars[0].parent / "*")


def test_distributed_workers_rebalance_incrementally(connect_classpath, oracle_twin, kafka_oracle, tmp_path):
    """The scenario of the module's docstring on both brokers at once; each run checked on its
    own, then the assignments, the group, the topics and the timings compared."""
    prefix = f"connect-{uuid.uuid4().hex[:8]}"
    clusters = {"groupbroker": ConnectCluster("groupbroker", oracle_twin.bootstrap, tmp_path / "groupbroker",
                                              prefix, connect_classpath),
                "kafka": ConnectCluster("Kafka", kafka_oracle.bootstrap_servers, tmp_path / "kafka", prefix,
                                        connect_classpath)}
    try:
        with ThreadPoolExecutor(2) as pool:
            runs = {side: pool.submit(cluster.run) for side, cluster in clusters.items()}
            docs = {}
            for side, future in runs.items():
                try:
                    docs[side] = future.result()
                finally:
                    (tmp_path / f"{side}.json").write_text(json.dumps(getattr(clusters[side], "doc", None), indent=1))
    finally:
        for cluster in clusters.values():
            cluster.close()
    ours, kafka = docs["groupbroker"], docs["kafka"]
    check_run(ours, "groupbroker", prefix)
    check_run(kafka, "Kafka", prefix)
    assert_same(shape(ours), shape(kafka), "connect")
    for stage, key in (("killed", "moved_after_s"), ("returned", "back_after_s")):
        assert abs(ours[stage][key] - kafka[stage][key]) <= TIMING_SLACK, (
            f"{stage}: groupbroker {ours[stage][key]} s, Kafka {kafka[stage][key]} s")
