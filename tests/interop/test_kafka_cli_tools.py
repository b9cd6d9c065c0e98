"""Apache Kafka's own command-line tools (kafka-tools 4.3.1) against groupbroker and against
Apache Kafka 4.3.1 itself (issue 27): the same calls, in the same order, to both brokers, and
their stdout, stderr and exit codes compared once normalised. kafka-consumer-groups,
kafka-topics, kafka-get-offsets, the console producer and consumer, kafka-configs and
kafka-transactions run against the session's oracle pair; kafka-acls and kafka-features against
a pair of their own with Kafka's authorizer (and Kafka formatted with groupbroker's feature
levels).

The tools run as ``java -cp <Kafka's jars>/* <main class> ...`` would run them, but several to a
JVM: ``kafka_cli_tools/ToolBatch.java`` calls each tool's ``main`` with its own stdout, stderr
and stdin and keeps the exit code its ``Exit.exit`` asks for (a JVM start costs about a second).

What is normalised (:func:`normalised`), and nothing else:

* each broker's port (``127.0.0.1:<port>``) becomes ``127.0.0.1:PORT``;
* member ids the test's consumers were given become ``<member:client-id>``;
* topic ids (``TopicId: ...``) and producer ids chosen by the broker become ``<id>``;
* stack frames of the batch runner's reflective call of ``main`` (not the tool's: how the JVM
  calls a method by reflection changes after a few calls);
* log4j's timestamp at the start of a log line becomes ``[TIME]``, and the number of the admin
  client it names (a count of the admin clients the JVM has made) ``N``;
* group listings keep only this module's groups (``clitools-``...): the oracle brokers are
  shared with the other tests of the run;
* ``Elr: N/A`` / ``LastKnownElr: N/A`` of kafka-topics --describe (groupbroker does not serve
  DescribeTopicPartitions: docs/kafka-differences.md), asserted before it is normalised;
* kafka-configs --describe --all of the broker: cut to the settings groupbroker has, less
  log.dirs and offsets.topic.replication.factor (:data:`MACHINE_SETTINGS`);
* kafka-transactions' tables: producer ids become ``<pid:transactional id>``, the columns of
  clock times and durations and the timestamps of the last half hour (markers') placeholders,
  columns joined by one tab (their widths follow the values); an admin call's time-out its
  deadline and number of tries;
* kafka-acls: the ACLs of each resource, and the resources, sorted (Kafka's order changes from
  one Kafka run to the next);
* kafka-features: the finalized levels' epoch (Kafka's metadata offset; groupbroker's 1).

Every comparison also checks something of the expected content, so two equally broken answers
fail too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from apache_kafka.artefacts import KafkaUnavailable, cache_dir, kafka_classpath
from tests.support.processes import import_client, missing

HERE = Path(__file__).resolve().parent
BATCH_SOURCE = HERE / "kafka_cli_tools" / "ToolBatch.java"

GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"
OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"

#: Tools log WARN and worse to their stderr, as Kafka's tools-log4j2.yaml has them do.
LOG4J = """\
status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.follow = true
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""

#: The records' timestamps: record i of a partition at BASE_MS + i s, an hour ago (older records
#: would be deleted by Kafka's time-based retention while the test runs).
BASE_MS = (int(time.time()) - 3600) * 1000


def at(seconds: int, zone: str = "") -> str:
    """BASE_MS + ``seconds`` as --to-datetime takes it (UTC, or in ``zone`` such as +01:00)."""
    import datetime
    shift = datetime.timedelta(hours=int(zone[:3]), minutes=int(zone[4:])) if zone else datetime.timedelta(0)
    moment = datetime.datetime.fromtimestamp(BASE_MS / 1000 + seconds, datetime.timezone.utc) + shift
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000") + zone


@dataclass
class Result:
    stdout: str
    stderr: str
    code: int

    def lines(self) -> list[str]:
        return self.stdout.splitlines()


# --- running the tools ----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def tool_runner(tmp_path_factory):
    """A function running a list of (main class, args, stdin[, until]) in one JVM; results in
    order. ``until``: a regex the call's stdout must match, the call repeated until it does
    (ToolBatch.java)."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        missing("Kafka's command-line tools need Java 17 (java and javac on PATH)")
    try:
        lib = kafka_classpath()
    except KafkaUnavailable as e:
        missing(str(e))
    if not (cache_dir() / "lib" / "kafka-tools-4.3.1.jar").exists():
        missing(f"kafka-tools-4.3.1.jar is not among Kafka's jars in {cache_dir() / 'lib'}")
    source = BATCH_SOURCE.read_bytes()
    classes = cache_dir() / f"toolbatch-{hashlib.sha256(source).hexdigest()[:16]}"
    if not (classes / "ToolBatch.class").exists():
        staging = tmp_path_factory.mktemp("toolbatch-classes")
        subprocess.run(["javac", "-nowarn", "-cp", lib, "-d", str(staging), str(BATCH_SOURCE)], check=True,
                       capture_output=True)
        shutil.rmtree(classes, ignore_errors=True)
        shutil.copytree(staging, classes)
    work = tmp_path_factory.mktemp("tools")
    (work / "log4j2.properties").write_text(LOG4J)
    runs = iter(range(1_000_000))

    def run(calls: list[tuple[str, list[str], str]]) -> list[Result]:
        n = next(runs)
        calls_file, results_file = work / f"calls-{n}.json", work / f"results-{n}.json"
        calls_file.write_text(json.dumps([{"main": m, "args": a, "stdin": s, "until": u}
                                          for m, a, s, u in (tuple(c) + (None,) * (4 - len(c)) for c in calls)]))
        done = subprocess.run(["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                               f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}",
                               "-cp", f"{classes}{os.pathsep}{lib}", "ToolBatch", str(calls_file),
                               str(results_file)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and results_file.exists(), done.stdout + done.stderr
        return [Result(r["stdout"], r["stderr"], r["code"]) for r in json.loads(results_file.read_text())]

    return run


@pytest.fixture(scope="module")
def brokers(kafka_oracle, oracle_twin) -> dict[str, int]:
    """Apache Kafka and groupbroker, started once per run with the same settings."""
    return {"kafka": kafka_oracle.port, "ours": oracle_twin.port}


class Pair:
    """The same tool calls against both brokers: ``add`` returns an index, ``run`` the pairs."""

    def __init__(self, runner, ports: dict[str, int]):
        self.runner, self.ports, self.calls = runner, ports, []

    def add(self, main: str, *args: str, stdin: str = "", server_flag: str = "--bootstrap-server",
            until: str | None = None) -> int:
        self.calls.append((main, list(args), stdin, server_flag, until))
        return len(self.calls) - 1

    def run(self) -> list[tuple[Result, Result]]:
        flat = []
        for main, args, stdin, flag, until in self.calls:
            for name in ("kafka", "ours"):
                flat.append((main, [flag, f"127.0.0.1:{self.ports[name]}", *args], stdin, until))
        results = self.runner(flat)
        self.calls = []
        return [(results[i], results[i + 1]) for i in range(0, len(results), 2)]


# --- normalising ------------------------------------------------------------------------------------

MEMBER_IDS: dict[str, str] = {}        # member id -> its placeholder, filled as consumers join
OWN = "clitools-"


def normalised(text: str, ports: dict[str, int]) -> str:
    for port in ports.values():
        text = text.replace(f"127.0.0.1:{port}", "127.0.0.1:PORT")
    for member, placeholder in sorted(MEMBER_IDS.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(member, placeholder)
    text = re.sub(r"TopicId: \S+", "TopicId: <id>", text)
    text = re.sub(r"(?m)^\tat (jdk\.internal\.reflect|java\.base/jdk\.internal\.reflect|java\.base/java\.lang\.reflect"
                  r"|ToolBatch\.).*\n", "", text)
    text = re.sub(r"(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\]", "[TIME]", text)
    return re.sub(r"clientId=adminclient-\d+\]", "clientId=adminclient-N]", text)


def own_groups_only(text: str) -> str:
    """A group listing (header kept) with only this module's groups."""
    lines = text.splitlines()
    return "\n".join(line for i, line in enumerate(lines)
                     if line.startswith(OWN) or (i == 0 and line.startswith("GROUP")))


def same(pair: tuple[Result, Result], ports, *, filter_=None, stderr=True) -> Result:
    """Assert both brokers' results are equal once normalised; Kafka's result (normalised)."""
    kafka, ours = pair
    fix = (lambda t: filter_(normalised(t, ports))) if filter_ else (lambda t: normalised(t, ports))
    want = Result(fix(kafka.stdout), fix(kafka.stderr) if stderr else "", kafka.code)
    got = Result(fix(ours.stdout), fix(ours.stderr) if stderr else "", ours.code)
    if os.environ.get("CLITOOLS_DUMP"):            # a file to append every compared output to
        with open(os.environ["CLITOOLS_DUMP"], "a") as f:
            f.write(f"=== code {want.code}\n{want.stdout}\n--- stderr\n{want.stderr}\n")
            if got != want:
                f.write(f"!!! OURS code {got.code}\n{got.stdout}\n--- stderr\n{got.stderr}\n")
    assert got == want
    return want


# --- records and consumers ----------------------------------------------------------------------------

def produce(port: int, topic: str, per_partition: dict[int, int]) -> None:
    """Keyed records with fixed timestamps (record i of a partition: BASE_MS + i s), by kafka-python."""
    kafka = import_client("kafka")
    producer = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all")
    for partition, count in per_partition.items():
        for i in range(count):
            producer.send(topic, key=b"k%d" % i, value=b"v%d-%d" % (partition, i), partition=partition,
                          timestamp_ms=BASE_MS + i * 1000)
    producer.flush()
    producer.close()


def classic_member(port: int, group: str, topics: list[str], client_id: str, partitions: int):
    """A confluent-kafka member of a classic group (range assignor) holding every partition of
    ``topics``; librdkafka's background thread keeps the group Stable while the tools run."""
    return _member(port, group, topics, client_id, partitions,
                   {"group.protocol": "classic", "partition.assignment.strategy": "range",
                    "session.timeout.ms": 10000, "heartbeat.interval.ms": 500})


def commit(consumer, topic: str, offsets: dict[int, int]) -> None:
    ck = import_client("confluent_kafka")
    consumer.commit(offsets=[ck.TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def _member(port: int, group: str, topics: list[str], client_id: str, partitions: int, settings: dict):
    ck = import_client("confluent_kafka")
    consumer = ck.Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group,
                            "client.id": client_id, "enable.auto.commit": False,
                            "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 500,
                            **settings})
    consumer.subscribe(topics)
    deadline = time.monotonic() + 30
    while len(consumer.assignment()) != partitions:
        assert time.monotonic() < deadline, f"{client_id} was never assigned {topics}"
        consumer.poll(0.1)
    MEMBER_IDS[consumer.memberid()] = f"<member:{client_id}>"
    return consumer


def consumer_protocol_member(port: int, group: str, topic: str, client_id: str, partitions: int):
    """A confluent-kafka member with ``group.protocol=consumer`` (KIP-848), assigned everything."""
    return _member(port, group, [topic], client_id, partitions, {"group.protocol": "consumer"})


# --- kafka-consumer-groups ------------------------------------------------------------------------------

TOPIC = "clitools-orders"
OTHER = "clitools-other"
EMPTY, STABLE, NEW = "clitools-empty", "clitools-stable", "clitools-kip848"


@pytest.fixture(scope="module")
def groups(brokers, tool_runner):
    """On each broker: TOPIC (3 partitions: 5, 3 and 0 records) and OTHER (1 partition, 2
    records); EMPTY, a classic group left Empty with offsets 2, 1, 0 on TOPIC and 1 on OTHER;
    STABLE, a classic group with one kafka-python member holding TOPIC, offsets 4 and 3 on
    partitions 0 and 1; NEW, a consumer-protocol group with one confluent-kafka member holding
    TOPIC and offset 5 on partition 0."""
    pair = Pair(tool_runner, brokers)
    pair.add(TOPICS, "--create", "--topic", TOPIC, "--partitions", "3")
    pair.add(TOPICS, "--create", "--topic", OTHER, "--partitions", "1")
    for kafka, ours in pair.run():
        assert kafka.code == ours.code == 0, (kafka, ours)
    members = []
    for name, port in brokers.items():
        produce(port, TOPIC, {0: 5, 1: 3})
        produce(port, OTHER, {0: 2})
        empty = classic_member(port, EMPTY, [TOPIC, OTHER], f"clitools-e-{name}", 4)
        commit(empty, TOPIC, {0: 2, 1: 1, 2: 0})
        commit(empty, OTHER, {0: 1})
        empty.close()
        stable = classic_member(port, STABLE, [TOPIC], "clitools-stable-client", 3)
        commit(stable, TOPIC, {0: 4, 1: 3})
        new = consumer_protocol_member(port, NEW, TOPIC, "clitools-new-client", 3)
        commit(new, TOPIC, {0: 5})
        members.append((stable, new))
    yield pair
    for stable, new in members:
        stable.close()
        new.close()


def test_consumer_groups_list_and_describe(groups, brokers):
    """--list with --state/--type filters; --describe --offsets/--members/--state, with and
    without --verbose, of an Empty, a Stable classic and a consumer-protocol group."""
    pair = groups
    lists = [pair.add(GROUPS, "--list", *flags) for flags in (
        (), ("--state",), ("--state", "Stable"), ("--state", "empty"), ("--state", "Stable,Empty"),
        ("--type",), ("--type", "classic"), ("--type", "consumer"), ("--state", "--type"),
        ("--state", "Stable", "--type", "consumer"), ("--state", "Bogus"), ("--type", "bogus"))]
    describes = [pair.add(GROUPS, "--describe", "--group", group, *flags)
                 for group in (EMPTY, STABLE, NEW)
                 for flags in ((), ("--offsets",), ("--offsets", "--verbose"), ("--members",),
                               ("--members", "--verbose"), ("--state",), ("--state", "--verbose"))]
    both = pair.add(GROUPS, "--describe", "--group", EMPTY, "--group", STABLE, "--members")
    unknown = [pair.add(GROUPS, "--describe", "--group", "clitools-nobody", *flags)
               for flags in ((), ("--members",), ("--state",))]
    results = pair.run()

    listed = [same(results[i], brokers, filter_=own_groups_only) for i in lists]
    assert listed[0].lines() == sorted([EMPTY, STABLE, NEW]) or set(listed[0].lines()) == {EMPTY, STABLE, NEW}
    rows = [line.split() for line in listed[8].lines()]
    assert rows[0] == ["GROUP", "TYPE", "STATE"]
    assert sorted(rows[1:]) == sorted([[EMPTY, "Classic", "Empty"], [STABLE, "Classic", "Stable"],
                                       [NEW, "Consumer", "Stable"]])
    assert [line.split()[0] for line in listed[9].lines()] == ["GROUP", NEW]
    assert listed[10].code == listed[11].code == 1

    seen = [same(results[i], brokers) for i in describes]
    offsets = {g: seen[k * 7] for k, g in enumerate((EMPTY, STABLE, NEW))}
    assert [line.split()[:6] for line in offsets[EMPTY].lines()[1:]] == [
        ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"],
        [EMPTY, TOPIC, "0", "2", "5", "3"], [EMPTY, TOPIC, "1", "1", "3", "2"], [EMPTY, TOPIC, "2", "0", "0", "0"],
        [EMPTY, OTHER, "0", "1", "2", "1"]]
    assert "Consumer group 'clitools-empty' has no active members." in offsets[EMPTY].stderr
    assert "<member:clitools-stable-client>" in offsets[STABLE].stdout
    assert "<member:clitools-new-client>" in offsets[NEW].stdout
    same(results[both], brokers)
    for i in unknown:
        assert "GroupIdNotFoundException: Group clitools-nobody not found." in same(results[i], brokers).stdout


def test_consumer_groups_reset_offsets(groups, brokers, tmp_path):
    """--reset-offsets: every scope and strategy, --dry-run then --execute, on an Empty group;
    refused on a Stable one."""
    pair = groups
    plan = tmp_path / "offsets.csv"
    plan.write_text(f"{TOPIC},0,1\n{TOPIC},1,2\n{OTHER},0,0\n")
    strategies = [("--to-earliest",), ("--to-latest",), ("--to-offset", "1"), ("--to-offset", "100"),
                  ("--shift-by", "-2"), ("--shift-by", "3"), ("--to-datetime", at(2)),
                  ("--to-datetime", at(2, "+01:00")), ("--by-duration", "PT30M"), ("--by-duration", "PT2H"),
                  ("--to-current",)]
    scopes = [("--all-topics",), ("--topic", TOPIC), ("--topic", f"{TOPIC}:0,1"), ("--topic", OTHER, "--topic", f"{TOPIC}:2")]
    dry = [pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, *scope, *strategy, "--dry-run")
           for strategy in strategies for scope in scopes]
    dry.append(pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, "--from-file", str(plan), "--dry-run"))
    dry.append(pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, "--all-topics", "--to-earliest"))  # neither
    refused = [pair.add(GROUPS, "--reset-offsets", "--group", g, "--all-topics", "--to-earliest", "--execute")
               for g in (STABLE, NEW)]
    executed = []
    for strategy, scope in [(("--shift-by", "-1"), ("--topic", f"{TOPIC}:0,1")),
                            (("--to-latest",), ("--topic", OTHER)),
                            (("--to-datetime", at(1)), ("--all-topics",)),
                            (("--by-duration", "PT30M"), ("--topic", f"{TOPIC}:1")),
                            (("--to-current",), ("--all-topics",))]:
        executed.append(pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, *scope, *strategy, "--execute"))
        executed.append(pair.add(GROUPS, "--describe", "--group", EMPTY))
    executed.append(pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, "--from-file", str(plan), "--execute"))
    executed.append(pair.add(GROUPS, "--describe", "--group", EMPTY))
    bad = [pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, "--topic", "clitools-nosuch", "--to-earliest"),
           pair.add(GROUPS, "--reset-offsets", "--group", EMPTY, "--to-earliest")]
    results = pair.run()

    plans = [same(results[i], brokers) for i in dry]
    def table(r: Result) -> list[list[str]]:       # the header, then the rows sorted (Kafka prints a hash map's order)
        lines = r.lines()
        start = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))   # after "Warn:" lines
        rows = [line.split() for line in lines[start:] if line.strip()]
        return rows[:1] + sorted(rows[1:])

    assert table(plans[0]) == [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [EMPTY, TOPIC, "0", "0"],
                               [EMPTY, TOPIC, "1", "0"], [EMPTY, TOPIC, "2", "0"], [EMPTY, OTHER, "0", "0"]]
    by_time = plans[strategies.index(("--to-datetime", at(2))) * 4 + 1]
    assert table(by_time)[1:] == [[EMPTY, TOPIC, "0", "2"], [EMPTY, TOPIC, "1", "2"], [EMPTY, TOPIC, "2", "0"]]
    assert table(plans[-2])[1:] == [[EMPTY, TOPIC, "0", "1"], [EMPTY, TOPIC, "1", "2"], [EMPTY, OTHER, "0", "0"]]
    for i in refused:
        assert "inactive, but the current state is Stable" in same(results[i], brokers).stdout
    after = [same(results[i], brokers) for i in executed]
    final = table(after[-1])
    assert final[0][:6] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    assert [r[:4] for r in final[1:]] == [[EMPTY, TOPIC, "0", "1"], [EMPTY, TOPIC, "1", "2"],
                                          [EMPTY, TOPIC, "2", "0"], [EMPTY, OTHER, "0", "0"]]
    unknown_topic, no_scope = (same(results[i], brokers) for i in bad)
    assert "This server does not host this topic-partition." in unknown_topic.stdout   # exit code 0: the tool's
    assert no_scope.code == 1 and "--all-topics" in no_scope.stderr


def test_consumer_groups_delete_offsets_and_delete(groups, brokers):
    """--delete-offsets of a topic and of partitions; --delete of an Empty, a Stable and an
    unknown group."""
    pair = groups
    steps = [pair.add(GROUPS, "--delete-offsets", "--group", EMPTY, "--topic", f"{TOPIC}:2"),
             pair.add(GROUPS, "--describe", "--group", EMPTY),
             pair.add(GROUPS, "--delete-offsets", "--group", EMPTY, "--topic", OTHER),
             pair.add(GROUPS, "--delete-offsets", "--group", STABLE, "--topic", TOPIC),
             pair.add(GROUPS, "--delete-offsets", "--group", "clitools-nobody", "--topic", TOPIC),
             pair.add(GROUPS, "--delete-offsets", "--group", EMPTY, "--topic", "clitools-nosuch"),
             pair.add(GROUPS, "--describe", "--group", EMPTY),
             pair.add(GROUPS, "--delete", "--group", STABLE),
             pair.add(GROUPS, "--delete", "--group", NEW),
             pair.add(GROUPS, "--delete", "--group", "clitools-nobody"),
             pair.add(GROUPS, "--delete", "--group", EMPTY),
             pair.add(GROUPS, "--list")]
    results = pair.run()
    seen = [same(r, brokers, filter_=own_groups_only if i == len(steps) - 1 else None)
            for i, r in enumerate(results)]
    assert "Request succeeded for deleting offsets" in seen[0].stdout
    assert [line.split()[:3] for line in seen[6].lines()[2:]] == [[EMPTY, TOPIC, "0"], [EMPTY, TOPIC, "1"]]
    assert "GroupSubscribedToTopicException" in seen[3].stdout
    assert "GroupNotEmptyException: The group is not empty." in seen[7].stdout
    assert "was successful" in seen[10].stdout
    assert set(seen[11].lines()) == {STABLE, NEW}


def test_groupbroker_groups_matches_the_real_tool(groups, brokers, oracle_twin):
    """``groupbroker groups`` (kafka-consumer-groups' options) prints what the real tool prints,
    against the same broker."""
    pair = groups
    asks = [("--list", "--state", "--type"), ("--describe", "--group", STABLE),
            ("--describe", "--group", NEW, "--members", "--verbose"), ("--describe", "--group", STABLE, "--state"),
            ("--describe", "--group", "clitools-nobody")]
    for ask in asks:
        pair.add(GROUPS, *ask)
    results = pair.run()
    for ask, (kafka, real) in zip(asks, results):
        ours = subprocess.run([sys.executable, "-m", "broker", "groups", "--bootstrap-server",
                               oracle_twin.bootstrap, *ask], capture_output=True, text=True)
        def fix(text: str) -> str:       # ours lists groups sorted, the real tool in the broker's order
            if ask[0] != "--list":
                return normalised(text, brokers)
            lines = own_groups_only(normalised(text, brokers)).splitlines()
            return "\n".join(lines[:1] + sorted(lines[1:]))
        assert (fix(ours.stdout), ours.returncode) == (fix(real.stdout), real.code), ask
        if "\tat " not in real.stderr:     # ours prints the error line without the Java stack trace
            assert fix(ours.stderr).strip() == fix(real.stderr).strip(), ask


# --- kafka-share-groups ------------------------------------------------------------------------------

SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
SHARE_TOPIC, SHARE_GROUP = "clitools-share-orders", "clitools-share"


def share_member_once(port: int, group: str, topic: str, records: int) -> None:
    """A confluent-kafka share consumer that accepts ``records`` records and leaves."""
    ck = import_client("confluent_kafka")
    member = ck.ShareConsumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group,
                               "share.acknowledgement.mode": "explicit"})
    member.subscribe([topic])
    taken, deadline = 0, time.monotonic() + 30
    try:
        while taken < records and time.monotonic() < deadline:
            for m in member.poll(0.3):
                if m.error() is None and taken < records:
                    member.acknowledge(m, ck.AcknowledgeType.ACCEPT)
                    taken += 1
                elif m.error() is None:
                    member.acknowledge(m, ck.AcknowledgeType.RELEASE)
            member.commit_sync()
    finally:
        member.close()
    assert taken == records, f"{taken} of {records} records on port {port}"


def share_groups_that_read(pair: Pair, brokers, topics: list[str], groups: list[str], configs: str) -> None:
    """On both brokers: the topics (one partition each), the groups' configs, six records in the
    first topic, of which a member of each group accepts four and leaves."""
    for topic in topics:
        pair.add(TOPICS, "--create", "--topic", topic, "--partitions", "1")
    for group in groups:
        pair.add(CONFIGS, "--alter", "--entity-type", "groups", "--entity-name", group, "--add-config", configs)
    for kafka, ours in pair.run():
        assert kafka.code == ours.code == 0, (kafka, ours)
    for port in brokers.values():
        produce(port, topics[0], {0: 6})
        for group in groups:
            share_member_once(port, group, topics[0], 4)


def test_share_groups(brokers, tool_runner):
    """kafka-share-groups: --list, --describe (offsets, --members, --state) of an empty share
    group and of an unknown one, --reset-offsets (--dry-run, --execute), --delete-offsets,
    --delete."""
    pair = Pair(tool_runner, brokers)
    share_groups_that_read(pair, brokers, [SHARE_TOPIC], [SHARE_GROUP], "share.auto.offset.reset=earliest")
    steps = [pair.add(SHARE_GROUPS, "--list"),
             pair.add(SHARE_GROUPS, "--list", "--state", "Empty"),
             pair.add(SHARE_GROUPS, "--describe", "--group", SHARE_GROUP),
             pair.add(SHARE_GROUPS, "--describe", "--group", SHARE_GROUP, "--members"),
             pair.add(SHARE_GROUPS, "--describe", "--group", SHARE_GROUP, "--state"),
             pair.add(SHARE_GROUPS, "--describe", "--group", "clitools-nobody"),
             pair.add(SHARE_GROUPS, "--reset-offsets", "--group", SHARE_GROUP, "--topic", SHARE_TOPIC,
                      "--to-earliest", "--dry-run"),
             pair.add(SHARE_GROUPS, "--reset-offsets", "--group", SHARE_GROUP, "--topic", SHARE_TOPIC,
                      "--to-earliest", "--execute"),
             pair.add(SHARE_GROUPS, "--describe", "--group", SHARE_GROUP),
             pair.add(SHARE_GROUPS, "--delete-offsets", "--group", SHARE_GROUP, "--topic", SHARE_TOPIC),
             pair.add(SHARE_GROUPS, "--delete", "--group", SHARE_GROUP),
             pair.add(SHARE_GROUPS, "--delete", "--group", "clitools-nobody"),
             pair.add(SHARE_GROUPS, "--list")]
    results = pair.run()
    seen = [same(r, brokers, filter_=own_groups_only if i in (0, 1, len(steps) - 1) else None)
            for i, r in enumerate(results)]
    assert SHARE_GROUP in seen[0].lines()
    # 4 of 6 records accepted: the start offset Kafka wrote before it moved, and a lag of 2
    assert [line.split() for line in seen[2].lines()[2:]] == [[SHARE_GROUP, SHARE_TOPIC, "0", "0", "2"]]
    assert SHARE_GROUP not in seen[-1].lines()


SH_TOPIC, SH_IDLE = "clitools-sh-orders", "clitools-sh-idle"
#: the real tool's group and groupbroker's tool's group: as long as each other (the tables' widths)
SH_REAL, SH_OURS = "clitools-sh-kt", "clitools-sh-gb"
#: kafka-share-groups' calls with a live member in each group ({g}: the group)
SH_LIVE = [["--list"], ["--list", "--state"], ["--list", "--state", "stable,Empty"], ["--list", "--state", "Bogus"],
           ["--describe", "--group", "{g}"], ["--describe", "--group", "{g}", "--verbose"],
           ["--describe", "--group", "{g}", "--members"], ["--describe", "--group", "{g}", "--members", "--verbose"],
           ["--describe", "--group", "{g}", "--state"], ["--describe", "--group", "{g}", "--state", "--verbose"],
           ["--reset-offsets", "--group", "{g}", "--topic", SH_TOPIC, "--to-earliest", "--execute"],
           ["--delete", "--group", "{g}"]]
#: ... and once the members have left
SH_EMPTY = [["--describe", "--group", "clitools-nobody"], ["--describe", "--group", "{g}", "--members"],
            ["--reset-offsets", "--group", "{g}", "--topic", SH_TOPIC, "--to-latest", "--dry-run"],
            ["--reset-offsets", "--group", "{g}", "--all-topics", "--to-earliest", "--execute"],
            ["--reset-offsets", "--group", "{g}", "--topic", f"{SH_TOPIC}:5", "--to-earliest", "--execute"],
            ["--reset-offsets", "--group", "{g}", "--topic", SH_TOPIC, "--to-datetime", at(3), "--execute"],
            ["--describe", "--group", "{g}", "--verbose"],
            ["--delete-offsets", "--group", "{g}", "--topic", SH_IDLE, "--topic", "clitools-nosuch"],
            ["--delete-offsets", "--group", "clitools-nobody", "--topic", SH_TOPIC],
            ["--describe", "--group", "{g}"],
            ["--delete", "--group", "{g}", "--group", "clitools-nobody"], ["--delete", "--group", "{g}"],
            ["--reset-offsets", "--group", "{g}", "--topic", SH_TOPIC, "--to-earliest"],
            ["--delete", "--group", "{g}", "--topic", SH_TOPIC], ["--describe", "--group", "{g}", "--offsets", "--state"],
            ["--list"]]


def idle_share_member(port: int, group: str, stop: threading.Event) -> None:
    """A confluent-kafka share consumer of SH_IDLE (which has no records) until ``stop``."""
    ck = import_client("confluent_kafka")
    member = ck.ShareConsumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": group,
                               "client.id": "idle-member"})
    member.subscribe([SH_IDLE])
    try:
        while not stop.is_set():
            member.poll(0.2)
    finally:
        member.close()


def wait_assigned(port: int, group: str) -> None:
    """Until the group's one member holds SH_IDLE at the group's assignment epoch."""
    from kafka_client.admin import Cluster, Connection, GroupsError, describe_share_group, find_coordinator
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        cluster = Cluster(Connection("127.0.0.1", port))
        try:
            _, host, coordinator_port = find_coordinator(cluster, group)
            described = describe_share_group(cluster.connection(host, coordinator_port), group)
            if [m.partitions for m in described.members] == [[(SH_IDLE, 0)]] \
                    and described.members[0].member_epoch == described.assignment_epoch:
                return
        except GroupsError:
            pass
        finally:
            cluster.close()
        time.sleep(0.2)
    raise AssertionError(f"the member of {group} on port {port} was never assigned {SH_IDLE}")


def share_view(text: str, group: str, ports) -> str:
    """A share tool's output, normalised: member ids (22 characters of base64, librdkafka's with
    + and /) masked, the rows
    of this test's other groups left out (each broker holds both tools' groups) and ``group``
    named ``<group>``."""
    text = re.sub(r"(?<![\w+/=-])[A-Za-z0-9+/_-]{22}(?![\w+/=-])", "<member>", normalised(text, ports))
    foreign = {SH_REAL, SH_OURS, SHARE_GROUP} - {group}
    return "\n".join(line for line in text.splitlines()
                     if not (line.split() and line.split()[0] in foreign)).replace(group, "<group>")


def first_error_line(stderr: str) -> str | None:
    """The first line of a tool's stderr that is neither blank, a log line nor a stack frame;
    a list of valid states sorted (Kafka's comes from a Set.of, in an order each JVM draws)."""
    line = next((line for line in stderr.splitlines() if line.strip() and not line.startswith(("[", "\tat "))), None)
    if line and "Valid states are: " in line:
        head, _, states = line.partition("Valid states are: ")
        line = head + "Valid states are: " + ", ".join(sorted(states.split(", ")))
    return line


def test_groupbroker_share_groups_matches_the_real_tool(brokers, tool_runner):
    """``groupbroker groups --share`` (kafka-share-groups' options) prints what the real tool
    prints, on both brokers: the real tool acts on one share group, ours on another set up
    the same way, with a live member (Stable) and after it left (Empty), then deleted."""
    pair = Pair(tool_runner, brokers)
    # no assignment interval: epochs that do not hang on timing
    share_groups_that_read(pair, brokers, [SH_TOPIC, SH_IDLE], [SH_REAL, SH_OURS],
                           "share.auto.offset.reset=earliest,share.assignment.interval.ms=0")

    def ours(port: int, args: list[str]) -> Result:
        done = subprocess.run([sys.executable, "-m", "broker", "groups", "--share", "--bootstrap-server",
                               f"127.0.0.1:{port}", *args], capture_output=True, text=True, timeout=120)
        return Result(done.stdout, done.stderr, done.returncode)

    seen = []
    for steps, live in ((SH_LIVE, True), (SH_EMPTY, False)):
        stop, members = threading.Event(), []
        if live:
            members = [threading.Thread(target=idle_share_member, args=(port, group, stop), daemon=True)
                       for port in brokers.values() for group in (SH_REAL, SH_OURS)]
            for thread in members:
                thread.start()
            for port in brokers.values():
                for group in (SH_REAL, SH_OURS):
                    wait_assigned(port, group)
        try:
            for args in steps:
                pair.add(SHARE_GROUPS, *(a.format(g=SH_REAL) for a in args))
            real = pair.run()
            mine = [{name: ours(port, [a.format(g=SH_OURS) for a in args]) for name, port in brokers.items()}
                    for args in steps]
        finally:
            stop.set()
            for thread in members:
                thread.join(30)
        for args, (real_kafka, real_ours), by_broker in zip(steps, real, mine):
            for name, theirs in (("kafka", real_kafka), ("ours", real_ours)):
                got = by_broker[name]
                want = [share_view(theirs.stdout, SH_REAL, brokers), theirs.code]
                have = [share_view(got.stdout, SH_OURS, brokers), got.code]
                if args[0] == "--list":
                    want[0], have[0] = (sorted(t.splitlines()) for t in want[0:1] + have[0:1])
                assert have == want, (args, name, got.stderr)
                if "\tat " not in theirs.stderr:        # ours prints no Java stack trace
                    assert (share_view(first_error_line(got.stderr) or "", SH_OURS, brokers)
                            == share_view(first_error_line(theirs.stderr) or "", SH_REAL, brokers)), \
                        (args, name, theirs.stderr, got.stderr)
            seen.append(share_view(real_kafka.stdout, SH_REAL, brokers))
    text = "\n".join(seen)
    assert "GROUP           COORDINATOR (ID)" in text and "START-OFFSET" in text and "idle-member" in text
    assert "These share groups were deleted successfully: '<group>'" in text
    assert "* Group 'clitools-nobody' could not be deleted due to: java.lang.IllegalArgumentException" in text



# --- kafka-streams-groups (issue 29) -----------------------------------------------------------------

STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
ST_TOPIC = "clitools-st-lines"
#: the real tool's group and groupbroker's tool's group: as long as each other (the tables' widths)
ST_REAL, ST_OURS = "clitools-st-kt", "clitools-st-gb"
ST_MEMBER, ST_PROCESS = "clitools-st-member-0001", "8a1e6f4c-0d3b-4b8e-9f7a-2c5d1e0b3a11"
#: kafka-streams-groups' calls with a live member in each group ({g}: the group)
ST_LIVE = [["--list"], ["--list", "--state"], ["--list", "--state", "stable,Empty"], ["--list", "--state", "Bogus"],
           ["--describe", "--group", "{g}"], ["--describe", "--group", "{g}", "--verbose"],
           ["--describe", "--group", "{g}", "--members"], ["--describe", "--group", "{g}", "--members", "--verbose"],
           ["--describe", "--group", "{g}", "--state"], ["--describe", "--group", "{g}", "--state", "--verbose"],
           ["--describe", "--group", "clitools-nobody"],
           ["--reset-offsets", "--group", "{g}", "--input-topic", ST_TOPIC, "--to-earliest", "--execute"],
           ["--delete-offsets", "--group", "{g}", "--input-topic", ST_TOPIC],
           ["--delete", "--group", "{g}"],
           ["--delete", "--group", "{g}", "--input-topic", ST_TOPIC],
           ["--describe", "--group", "{g}", "--members", "--state"], ["--reset-offsets", "--group", "{g}"],
           ["--delete-offsets", "--group", "{g}", "--group", "x", "--all-input-topics"], ["--list", "--describe"]]
#: ... and once the member has left
ST_EMPTY = [["--describe", "--group", "{g}"], ["--describe", "--group", "{g}", "--members"],
            ["--describe", "--group", "{g}", "--state"],
            ["--reset-offsets", "--group", "{g}", "--input-topic", ST_TOPIC, "--to-latest", "--dry-run"],
            ["--reset-offsets", "--group", "{g}", "--all-input-topics", "--to-earliest", "--execute"],
            ["--reset-offsets", "--group", "{g}", "--input-topic", f"{ST_TOPIC}:1", "--shift-by", "1", "--dry-run"],
            ["--reset-offsets", "--group", "{g}", "--input-topic", f"{ST_TOPIC}:1", "--to-offset", "1", "--dry-run",
             "--export"],
            ["--delete-offsets", "--group", "{g}", "--input-topic", f"{ST_TOPIC}:0"],
            ["--delete-offsets", "--group", "clitools-nobody", "--input-topic", ST_TOPIC],
            ["--delete", "--group", "{g}", "--group", "clitools-nobody", "--delete-all-internal-topics"],
            ["--delete", "--group", "{g}"], ["--list"]]


def streams_member(port: int, group: str, stop: threading.Event, ready: threading.Event) -> None:
    """A Kafka Streams member played over raw StreamsGroupHeartbeats (a word count: a repartition
    topic and a changelog, made by the broker), heartbeating every 300 ms until ``stop``, then
    leaving; once it runs its tasks it commits offsets of the input topic at its epoch."""
    from kafka_client.blocking import BlockingClient
    from kafka_client.admin import Cluster, Connection, find_coordinator
    from protocol.api_keys import ApiKey
    from protocol.messages import REQUESTS
    cls = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls
    sub = cls.Topology.Subtopology
    info = sub.TopicInfo
    repartition, changelog = f"{group}-counts-repartition", f"{group}-counts-changelog"
    topology = cls.Topology(epoch=0, subtopologies=(
        sub(subtopology_id="0", source_topics=(ST_TOPIC,), source_topic_regex=(), state_changelog_topics=(),
            repartition_sink_topics=(repartition,), repartition_source_topics=(), copartition_groups=()),
        sub(subtopology_id="1", source_topics=(), source_topic_regex=(), repartition_sink_topics=(),
            repartition_source_topics=(info(name=repartition, partitions=0, replication_factor=0, topic_configs=()),),
            state_changelog_topics=(info(name=changelog, partitions=0, replication_factor=0, topic_configs=()),),
            copartition_groups=())))
    cluster = Cluster(Connection("127.0.0.1", port))
    _, host, coordinator_port = find_coordinator(cluster, group)
    client = BlockingClient(host, coordinator_port, client_id="clitools-streams")
    epoch, active, committed = 0, (), False

    def beat(epoch: int):
        return client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, cls(
            group_id=group, member_id=ST_MEMBER, member_epoch=epoch, endpoint_information_epoch=-1,
            rebalance_timeout_ms=30000 if epoch == 0 else -1, topology=topology if epoch == 0 else None,
            active_tasks=active, standby_tasks=(), warmup_tasks=(), process_id=ST_PROCESS if epoch == 0 else None))
    try:
        while not stop.is_set():
            answer = beat(epoch)
            assert answer.error_code == 0, answer
            epoch = answer.member_epoch
            if answer.active_tasks is not None:
                active = answer.active_tasks
            if not committed and any(t.subtopology_id == "0" for t in active):
                oc = REQUESTS[ApiKey.OFFSET_COMMIT].cls
                topic = oc.OffsetCommitRequestTopic
                done = client.call(ApiKey.OFFSET_COMMIT, 9, oc(
                    group_id=group, generation_id_or_member_epoch=epoch, member_id=ST_MEMBER, group_instance_id=None,
                    topics=(topic(name=ST_TOPIC, partitions=tuple(topic.OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=off, committed_metadata="") for p, off in ((0, 1), (1, 2)))),)))
                assert all(p.error_code == 0 for t in done.topics for p in t.partitions), done
                committed = True
            if committed and not answer.status:
                ready.set()
            time.sleep(0.3)
        beat(-1)
    finally:
        client.close()
        cluster.close()


def streams_view(text: str, group: str, ports, *, unordered: bool = False) -> str:
    """A streams tool's output normalised: the coordinator's port, the rows of this test's other
    group left out, ``group`` named ``<group>``; ``unordered``: the lines sorted (rows Kafka's tool
    prints in an order its JVM draws)."""
    foreign = ({ST_REAL, ST_OURS} - {group}).pop()
    lines = [line for line in normalised(text, ports).splitlines() if not line.startswith(foreign)]
    return "\n".join(sorted(lines) if unordered else lines).replace(group, "<group>")


def test_groupbroker_streams_groups_matches_the_real_tool(brokers, tool_runner):
    """``groupbroker groups --streams`` (kafka-streams-groups' options) prints what the real
    tool prints, on both brokers: the real tool acts on one streams group, ours on another set up
    the same way, with a live member (Stable, its tasks and committed offsets), then Empty (reset,
    offsets deleted, internal topics deleted with the group)."""
    pair = Pair(tool_runner, brokers)
    pair.add(TOPICS, "--create", "--topic", ST_TOPIC, "--partitions", "2")
    for group in (ST_REAL, ST_OURS):
        pair.add(CONFIGS, "--alter", "--entity-type", "groups", "--entity-name", group, "--add-config",
                 "streams.initial.rebalance.delay.ms=0,streams.assignment.interval.ms=0")
    for kafka, ours in pair.run():
        assert kafka.code == ours.code == 0, (kafka, ours)
    for port in brokers.values():
        produce(port, ST_TOPIC, {0: 3, 1: 4})

    def ours(port: int, args: list[str]) -> Result:
        done = subprocess.run([sys.executable, "-m", "broker", "groups", "--streams", "--bootstrap-server",
                               f"127.0.0.1:{port}", *args], capture_output=True, text=True, timeout=120)
        return Result(done.stdout, done.stderr, done.returncode)

    seen = []
    for steps, live in ((ST_LIVE, True), (ST_EMPTY, False)):
        stop, members = threading.Event(), []
        if live:
            for port in brokers.values():
                for group in (ST_REAL, ST_OURS):
                    ready = threading.Event()
                    thread = threading.Thread(target=streams_member, args=(port, group, stop, ready), daemon=True)
                    thread.start()
                    members.append((thread, ready))
            for _, ready in members:
                assert ready.wait(30), "a streams member never ran its tasks"
        try:
            for args in steps:
                pair.add(STREAMS_GROUPS, *(a.format(g=ST_REAL) for a in args))
            real = pair.run()
            mine = [{name: ours(port, [a.format(g=ST_OURS) for a in args]) for name, port in brokers.items()}
                    for args in steps]
        finally:
            stop.set()
            for thread, _ in members:
                thread.join(30)
        for args, (real_kafka, real_ours), by_broker in zip(steps, real, mine):
            unordered = args[0] == "--list" or (args[0] == "--describe" and "--members" not in args
                                                and "--state" not in args)
            for name, theirs in (("kafka", real_kafka), ("ours", real_ours)):
                got = by_broker[name]
                want = [streams_view(theirs.stdout, ST_REAL, brokers, unordered=unordered), theirs.code]
                have = [streams_view(got.stdout, ST_OURS, brokers, unordered=unordered), got.code]
                assert have == want, (args, name, got.stderr, theirs.stderr)
                assert (streams_view(first_error_line(got.stderr) or "", ST_OURS, brokers)
                        == streams_view(first_error_line(theirs.stderr) or "", ST_REAL, brokers)), \
                    (args, name, theirs.stderr, got.stderr)
            seen.append(streams_view(real_kafka.stdout, ST_REAL, brokers))
    text = "\n".join(seen)
    assert "ACTIVE: 0:[0,1]; 1:[0,1]; " in text and "OFFSET-LAG" in text and "Stable" in text
    assert "Deletion of associated internal topics of the streams groups ('<group>') was successful." in text


# --- kafka-topics, kafka-get-offsets, kafka-console-producer/-consumer ----------------------------------

def test_topics_offsets_and_console_tools(brokers, tool_runner):
    """kafka-topics --create/--list/--describe/--alter/--delete, kafka-get-offsets, and lines
    produced by kafka-console-producer read back by kafka-console-consumer in a group."""
    pair, topic = Pair(tool_runner, brokers), "clitools-console"
    steps = [pair.add(TOPICS, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1"),
             pair.add(TOPICS, "--create", "--topic", topic, "--partitions", "2"),
             pair.add(TOPICS, "--list", "--exclude-internal"),
             pair.add(TOPICS, "--alter", "--topic", topic, "--partitions", "3"),
             pair.add(TOPICS, "--alter", "--topic", topic, "--partitions", "2"),
             pair.add(TOPICS, "--describe", "--topic", topic),
             pair.add(PRODUCER, "--topic", topic, "--reader-property", "parse.key=true",
                      stdin="a\t1\nb\t2\nc\t3\nd\t4\ne\t5\n"),
             pair.add(OFFSETS, "--topic", topic),
             pair.add(OFFSETS, "--topic", topic, "--time", "-2"),
             pair.add(CONSUMER, "--topic", topic, "--from-beginning", "--max-messages", "5", "--group",
                      "clitools-console-group", "--formatter-property", "print.key=true",
                      "--formatter-property", "print.partition=true"),
             pair.add(GROUPS, "--describe", "--group", "clitools-console-group"),
             pair.add(TOPICS, "--delete", "--topic", topic),
             pair.add(TOPICS, "--describe", "--topic", topic)]
    results = pair.run()
    # groupbroker does not serve DescribeTopicPartitions (docs/kafka-differences.md): kafka-topics
    # falls back to Metadata, which has no eligible leader replicas
    kafka, ours = results[5]
    assert "\tElr: \tLastKnownElr: \n" in kafka.stdout and "\tElr: N/A\tLastKnownElr: N/A\n" in ours.stdout
    results[5] = (kafka, Result(ours.stdout.replace("\tElr: N/A\tLastKnownElr: N/A\n", "\tElr: \tLastKnownElr: \n"),
                                ours.stderr, ours.code))
    seen = [same(r, brokers, filter_=(lambda t: "\n".join(x for x in t.splitlines() if x.startswith(OWN)))
                 if i == 2 else None) for i, r in enumerate(results)]
    assert seen[0].stdout == f"Created topic {topic}.\n" and seen[1].code == 1
    assert topic in seen[2].stdout.splitlines()
    assert "2 would not be an increase" in seen[4].stdout
    assert f"Topic: {topic}\tTopicId: <id>\tPartitionCount: 3\tReplicationFactor: 1" in seen[5].stdout
    assert sum(int(line.rsplit(":", 1)[1]) for line in seen[7].lines()) == 5
    assert seen[8].lines() == [f"{topic}:{p}:0" for p in range(3)]
    assert sorted(line.split("\t", 1)[1] for line in seen[9].lines()) == ["a\t1", "b\t2", "c\t3", "d\t4", "e\t5"]
    assert "Processed a total of 5 messages" in seen[9].stderr
    assert seen[12].code == 1



# --- kafka-configs ----------------------------------------------------------------------------------------

CONFIGS = "kafka.admin.ConfigCommand"
CONFIGS_TOPIC, CONFIGS_GROUP = "clitools-configs", "clitools-configs-group"
#: Broker settings whose values are the machine's or the test's, not the broker's behaviour (as
#: tests/oracle/test_admin.py MACHINE_SETTINGS): log.dirs (each broker's own data directory)
#: and offsets.topic.replication.factor
#: (apache_kafka sets 1 on Kafka's command line, as one node needs; groupbroker shows Kafka's
#: default of 3).
MACHINE_SETTINGS = ("log.dirs", "offsets.topic.replication.factor")


def shared_settings(kafka: Result, ours: Result) -> tuple[Result, Result]:
    """``--describe --all`` of the broker: Kafka lists its ~340 settings, groupbroker the ~60 it
    has (docs/kafka-differences.md); both are cut to the settings groupbroker lists, less
    MACHINE_SETTINGS, once it is checked that Kafka lists every one of them."""
    def by_name(r: Result) -> dict[str, str]:
        return {line.split("=", 1)[0].strip(): line for line in r.lines()[1:]}
    theirs, mine = by_name(kafka), by_name(ours)
    assert set(mine) <= set(theirs), set(mine) - set(theirs)
    keep = sorted(set(mine) - set(MACHINE_SETTINGS))
    cut = lambda r, lines: Result("\n".join([r.lines()[0], *(lines[n] for n in keep)]), r.stderr, r.code)
    return cut(kafka, theirs), cut(ours, mine)


def test_configs(brokers, tool_runner):
    """kafka-configs --describe of a topic (dynamic and --all), --alter --add-config and
    --delete-config, invalid values and names, an unknown topic; of a group; of the broker,
    by id, --entity-default and --all."""
    pair = Pair(tool_runner, brokers)
    topic = ("--entity-type", "topics", "--entity-name", CONFIGS_TOPIC)
    group = ("--entity-type", "groups", "--entity-name", CONFIGS_GROUP)
    steps = [pair.add(TOPICS, "--create", "--topic", CONFIGS_TOPIC, "--partitions", "1",
                      "--config", "retention.ms=3600000"),
             pair.add(CONFIGS, "--describe", *topic),
             pair.add(CONFIGS, "--alter", *topic, "--add-config",
                      "cleanup.policy=[compact,delete],max.message.bytes=2000000"),
             pair.add(CONFIGS, "--describe", *topic),
             pair.add(CONFIGS, "--alter", *topic, "--delete-config", "retention.ms"),
             pair.add(CONFIGS, "--describe", *topic),
             pair.add(CONFIGS, "--describe", *topic, "--all"),
             pair.add(CONFIGS, "--alter", *topic, "--add-config", "retention.ms=soon"),
             pair.add(CONFIGS, "--alter", *topic, "--add-config", "cleanup.policy=sometimes"),
             pair.add(CONFIGS, "--alter", *topic, "--add-config", "clitools.no.such.config=1"),
             pair.add(CONFIGS, "--alter", *topic, "--delete-config", "segment.ms"),
             pair.add(CONFIGS, "--alter", *topic),
             pair.add(CONFIGS, "--describe", "--entity-type", "topics", "--entity-name", "clitools-nosuch"),
             pair.add(CONFIGS, "--alter", "--entity-type", "topics", "--entity-name", "clitools-nosuch",
                      "--add-config", "retention.ms=1"),
             pair.add(CONFIGS, "--alter", *group, "--add-config", "consumer.session.timeout.ms=50000"),
             pair.add(CONFIGS, "--describe", *group),
             pair.add(CONFIGS, "--alter", *group, "--add-config", "consumer.session.timeout.ms=5"),
             pair.add(CONFIGS, "--describe", "--entity-type", "brokers", "--entity-name", "1"),
             pair.add(CONFIGS, "--describe", "--entity-type", "brokers", "--entity-default"),
             pair.add(CONFIGS, "--describe", "--entity-type", "brokers"),
             pair.add(CONFIGS, "--describe", "--entity-type", "brokers", "--entity-name", "one"),
             pair.add(CONFIGS, "--describe", "--entity-type", "brokers", "--entity-name", "1", "--all"),
             pair.add(TOPICS, "--delete", "--topic", CONFIGS_TOPIC)]
    results = pair.run()
    results[21] = shared_settings(*results[21])
    seen = [same(r, brokers) for r in results]
    assert seen[1].lines() == [f"Dynamic configs for topic {CONFIGS_TOPIC} are:",
                               "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}"]
    assert seen[2].stdout == seen[4].stdout == f"Completed updating config for topic {CONFIGS_TOPIC}.\n"
    assert [line.split("=")[0].strip() for line in seen[3].lines()[1:]] == [
        "cleanup.policy", "max.message.bytes", "retention.ms"]
    assert "  cleanup.policy=compact,delete sensitive=false" in seen[5].stdout and "retention.ms" not in seen[5].stdout
    every = seen[6].lines()
    assert every[0] == f"All configs for topic {CONFIGS_TOPIC} are:" and len(every) > 30
    assert any(line.startswith("  segment.bytes=") for line in every)
    assert "Invalid value soon for configuration retention.ms" in seen[7].stderr
    assert "Invalid value sometimes for configuration cleanup.policy" in seen[8].stderr
    assert "Unknown topic config name: clitools.no.such.config" in seen[9].stderr
    assert seen[7].code == seen[8].code == seen[9].code == seen[11].code == seen[13].code == 1
    assert seen[12].stdout == "The topic 'clitools-nosuch' doesn't exist and doesn't have dynamic config.\n"
    assert "UnknownTopicOrPartitionException" in seen[13].stderr
    assert "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:" in seen[15].stdout
    assert "must be greater than or equal to group.consumer.min.session.timeout.ms" in seen[16].stderr
    assert seen[17].lines()[0] == "Dynamic configs for broker 1 are:"
    assert seen[18].lines()[0] == "Default configs for brokers in the cluster are:"
    assert seen[19].lines()[:2] == ["Dynamic configs for broker 1 are:", "Default configs for brokers in the cluster are:"]
    assert seen[20].code == 1 and "must be a valid integer broker id" in seen[20].stderr
    assert seen[21].lines()[0] == "All configs for broker 1 are:" and len(seen[21].lines()) > 40
    assert "  group.initial.rebalance.delay.ms=0 sensitive=false synonyms={STATIC_BROKER_CONFIG:" in seen[21].stdout


# --- kafka-transactions -----------------------------------------------------------------------------------

TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
TXN_TOPIC, DONE, OPEN = "clitools-txn", "clitools-tx-done", "clitools-tx-open"
#: columns of kafka-transactions' tables that hold the moment a tool or broker ran
CLOCK_COLUMNS = ("CurrentTransactionStartTimeMs", "TransactionDurationMs", "Duration(min)")


@pytest.fixture(scope="module")
def transactions(brokers):
    """On each broker, by kafka-python: TXN_TOPIC (2 partitions); DONE, a transaction committed
    (two records on partition 0); OPEN, one left open (a record on each partition) while the
    tools run. Records carry fixed timestamps (BASE_MS + s)."""
    kafka = import_client("kafka")
    from kafka.admin import KafkaAdminClient, NewTopic
    opened = []
    for port in brokers.values():
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}")
        admin.create_topics([NewTopic(TXN_TOPIC, 2, 1)])
        admin.close()
        done = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", transactional_id=DONE)
        done.init_transactions()
        done.begin_transaction()
        for i in range(2):
            done.send(TXN_TOPIC, value=b"done-%d" % i, partition=0, timestamp_ms=BASE_MS + i * 1000)
        done.commit_transaction()
        done.close()
        open_ = kafka.KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", transactional_id=OPEN,
                                    transaction_timeout_ms=120_000)
        open_.init_transactions()
        open_.begin_transaction()
        for p in range(2):
            open_.send(TXN_TOPIC, value=b"open-%d" % p, partition=p, timestamp_ms=BASE_MS + 5000)
        open_.flush()
        opened.append(open_)
    yield
    for open_ in opened:        # the test's forceTerminateTransaction has ended their transactions
        open_.close(timeout=5)


def producer_ids(describe: Result) -> dict[str, str]:
    """{producer id: <pid:transactional id>} from a ``describe --transactional-id`` table."""
    header, row = (line.split() for line in describe.lines()[:2])
    named = dict(zip(header, row))
    return {named["ProducerId"]: f"<pid:{named['TransactionalId']}>"}


def txn_table(r: Result, pids: dict[str, str]) -> Result:
    """A kafka-transactions table with its columns joined by one tab (widths follow the values):
    the broker's producer ids named by transactional id, CLOCK_COLUMNS and timestamps of the
    last half hour (a marker's: broker time; the records' are BASE_MS + s) as placeholders."""
    # an admin call that ran out of time says when and after how many tries
    stderr = re.sub(r"deadlineMs=\d+, tries=\d+, nextAllowedTryMs=-?\d+\) timed out at \d+ after \d+ attempt",
                    "deadlineMs=<ms>, tries=<n>, nextAllowedTryMs=<ms>) timed out at <ms> after <n> attempt", r.stderr)
    lines = r.lines()
    if not lines or "\t" not in lines[0]:
        return Result(r.stdout, stderr, r.code)
    header = lines[0].split()
    rows = [header]
    for line in lines[1:]:
        cells = []
        for name, cell in zip(header, line.split()):
            if name in CLOCK_COLUMNS and cell != "None":
                cell = f"<{name}>"
            elif name == "ProducerId":
                cell = pids.get(cell, cell)
            elif re.fullmatch(r"\d{13}", cell) and int(cell) > BASE_MS + 1_800_000:
                cell = "<now>"
            cells.append(cell)
        rows.append(cells)
    return Result("".join("\t".join(row) + "\n" for row in rows), stderr, r.code)


def test_transactions(brokers, tool_runner, transactions, tmp_path):
    """kafka-transactions list (with its filters), describe, describe-producers, find-hanging,
    abort and forceTerminateTransaction, of a committed and an ongoing transaction."""
    quick = tmp_path / "admin.properties"     # an unknown partition is retried until this runs out
    quick.write_text("request.timeout.ms=1000\ndefault.api.timeout.ms=1500\n")
    pair = Pair(tool_runner, brokers)
    steps = [pair.add(TRANSACTIONS, "list"),
             pair.add(TRANSACTIONS, "describe", "--transactional-id", DONE, until="CompleteCommit"),
             pair.add(TRANSACTIONS, "describe", "--transactional-id", OPEN),
             pair.add(TRANSACTIONS, "describe", "--transactional-id", "clitools-tx-nobody"),
             pair.add(TRANSACTIONS, "describe-producers", "--topic", TXN_TOPIC, "--partition", "0"),
             pair.add(TRANSACTIONS, "describe-producers", "--topic", TXN_TOPIC, "--partition", "1"),
             pair.add(TRANSACTIONS, "--command-config", str(quick), "describe-producers", "--topic",
                      "clitools-nosuch", "--partition", "0"),
             pair.add(TRANSACTIONS, "find-hanging", "--topic", TXN_TOPIC),
             pair.add(TRANSACTIONS, "find-hanging", "--topic", TXN_TOPIC, "--partition", "1",
                      "--max-transaction-timeout", "0"),
             pair.add(TRANSACTIONS, "find-hanging"),
             pair.add(TRANSACTIONS, "list", "--transactional-id-pattern", "clitools-tx-.*"),
             pair.add(TRANSACTIONS, "list", "--duration-filter", "100000000"),
             pair.add(TRANSACTIONS, "list", "--transactional-id-pattern", "(unclosed"),
             pair.add(TRANSACTIONS, "abort", "--topic", TXN_TOPIC, "--partition", "1"),
             pair.add(TRANSACTIONS, "abort", "--topic", TXN_TOPIC, "--partition", "1", "--start-offset", "99"),
             pair.add(TRANSACTIONS, "abort", "--topic", TXN_TOPIC, "--partition", "1", "--start-offset", "0"),
             pair.add(TRANSACTIONS, "describe-producers", "--topic", TXN_TOPIC, "--partition", "1"),
             pair.add(TRANSACTIONS, "forceTerminateTransaction", "--transactionalId", OPEN),
             pair.add(TRANSACTIONS, "describe", "--transactional-id", OPEN)]
    results = pair.run()
    pids = [producer_ids(results[1][i]) | producer_ids(results[2][i]) for i in (0, 1)]
    results = [(txn_table(kafka, pids[0]), txn_table(ours, pids[1])) for kafka, ours in results]
    # the oracles are shared: other tests' transactions are left out of the listings
    own = lambda t: "\n".join(line for i, line in enumerate(t.splitlines()) if i == 0 or line.startswith("clitools-tx-"))
    # the unknown partition's describe-producers (6) ends when the Admin client's deadline runs
    # out, and its message says where it was then (waiting for metadata, or for the call)
    seen = [same(r, brokers, filter_=own if i in (0, 11) else None, stderr=i != 6) for i, r in enumerate(results)]
    assert all(r.stderr.startswith("Failed to describe producers for partition clitools-nosuch-0 on leader: ")
               for r in results[6]), results[6]
    assert [line.split("\t") for line in seen[0].lines()] == [
        ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
        [OPEN, "1", f"<pid:{OPEN}>", "Ongoing"], [DONE, "1", f"<pid:{DONE}>", "CompleteCommit"]]
    assert seen[10].lines() == seen[0].lines()
    assert seen[1].lines()[1].split("\t") == ["1", DONE, f"<pid:{DONE}>", "0", "CompleteCommit", "60000",
                                              "<CurrentTransactionStartTimeMs>", "<TransactionDurationMs>"]
    assert seen[2].lines()[1].split("\t") == [
        "1", OPEN, f"<pid:{OPEN}>", "0", "Ongoing", "120000", "<CurrentTransactionStartTimeMs>",
        "<TransactionDurationMs>", f"{TXN_TOPIC}-1,{TXN_TOPIC}-0"]
    assert "the ID could not be found" in seen[3].stderr
    assert sorted(line.split("\t") for line in seen[4].lines()[1:]) == [     # in the hash order of their ids
        [f"<pid:{DONE}>", "0", "0", "1", "<now>", "None"], [f"<pid:{OPEN}>", "0", "-1", "0", str(BASE_MS + 5000), "3"]]
    assert seen[7].lines() == seen[8].lines() == [
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)"]
    assert "requires either --topic or --broker-id" in seen[9].stderr
    assert seen[11].lines() == ["TransactionalId\tCoordinator\tProducerId\tTransactionState"]
    assert "INVALID_REGULAR_EXPRESSION" in seen[12].stderr
    assert "Could not find any open transactions starting at offset 99" in seen[14].stderr
    assert (seen[15].stdout, seen[15].stderr) == ("", "")      # the open transaction aborted in partition 1
    aborted = [line.split("\t") for line in seen[16].lines()[1:] if line.startswith(f"<pid:{OPEN}>")]
    assert [row[-1] for row in aborted] == ["None"], seen[16].lines()       # no transaction open there now
    assert seen[17].stdout == ""
    assert seen[18].lines()[1].split("\t") == ["1", OPEN, f"<pid:{OPEN}>", "2", "Empty", "30000", "None", "None"]


# --- kafka-acls and kafka-features (a pair of brokers with an authorizer) ------------------------------

ACLS = "org.apache.kafka.tools.AclCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> dict[str, int]:
    """A Kafka and a groupbroker of their own with Kafka's StandardAuthorizer (a plaintext
    client is User:ANONYMOUS, a super user here, so that the ACLs the tools add cannot lock the
    tools out); Kafka formatted with the feature levels groupbroker finalizes
    (docs/kafka-differences.md), so kafka-features has the same to describe."""
    from tests.conftest import ORACLE_SETTINGS
    from tests.oracle.steps import own_pair
    settings = {**ORACLE_SETTINGS, "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:ANONYMOUS"}
    features = {"transaction.version": 1, "share.version": 0, "streams.version": 0}
    with own_pair(tmp_path_factory.mktemp("clitools-secured"), settings, features) as (ours, kafka):
        yield {"kafka": kafka.port, "ours": ours.port}


def acl_blocks(text: str) -> str:
    """kafka-acls' output with the ACLs of each resource sorted, and the resources sorted:
    Kafka prints them from hash sets and maps whose order changes from one Kafka run to the
    next (docs/kafka-differences.md: DescribeAcls)."""
    blocks = []
    for block in re.split(r"\n[ \t]*\n", text.strip()):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        heads = [line for line in lines if not line.startswith("(principal=")]
        blocks.append("\n".join(heads + sorted(line for line in lines if line.startswith("(principal="))))
    return "\n\n".join(sorted(b for b in blocks if b))


def test_acls_and_features(secured, tool_runner):
    """kafka-acls --add (allow and deny; topic, group, cluster, transactional id; literal and
    prefixed; --producer and --consumer), --list (by resource, by matching pattern, by
    principal), --remove --force, and its errors; kafka-features describe."""
    pair = Pair(tool_runner, secured)
    T, G, P = "clitools-acl-topic", "clitools-acl-group", "clitools-acl"
    steps = [pair.add(ACLS, "--list"),
             pair.add(ACLS, "--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
                      "--operation", "Read", "--operation", "Describe", "--topic", T, "--group", G),
             pair.add(ACLS, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.1",
                      "--operation", "Write", "--topic", P, "--resource-pattern-type", "prefixed"),
             pair.add(ACLS, "--add", "--allow-principal", "User:alice", "--operation", "Alter", "--cluster"),
             pair.add(ACLS, "--add", "--allow-principal", "User:carol", "--operation", "All",
                      "--transactional-id", "clitools-acl-tx"),
             pair.add(ACLS, "--add", "--producer", "--allow-principal", "User:pat", "--topic", "clitools-acl-p",
                      "--transactional-id", "clitools-acl-ptx"),
             pair.add(ACLS, "--add", "--consumer", "--allow-principal", "User:con", "--topic", "clitools-acl-p",
                      "--group", "clitools-acl-cg"),
             # Kafka's authorizer learns ACLs from its metadata log a moment after it answers
             pair.add(ACLS, "--list", until=r"(?s)\A(?=.*clitools-acl-ptx)(?=.*clitools-acl-cg)(?=.*User:carol)"
                                            r"(?=.*User:mallory)(?=.*kafka-cluster)(?=.*User:bob)"),
             pair.add(ACLS, "--list", "--topic", T),
             pair.add(ACLS, "--list", "--topic", T, "--resource-pattern-type", "match"),
             pair.add(ACLS, "--list", "--principal", "User:alice"),
             pair.add(ACLS, "--list", "--group", "clitools-acl-nobody"),
             pair.add(ACLS, "--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read",
                      "--operation", "Describe", "--topic", T, "--group", G),
             pair.add(ACLS, "--remove", "--force", "--topic", P, "--resource-pattern-type", "prefixed"),
             pair.add(ACLS, "--list", until=r"(?s)\A(?!.*User:bob)(?!.*PREFIXED)"),
             pair.add(ACLS, "--add", "--topic", T, "--operation", "Read"),
             pair.add(ACLS, "--add", "--group", G, "--operation", "Write", "--allow-principal", "User:alice"),
             pair.add(ACLS, "--add", "--topic", T, "--resource-pattern-type", "match", "--allow-principal",
                      "User:alice", "--operation", "Read"),
             pair.add(ACLS, "--add", "--allow-principal", "alice", "--topic", T),
             pair.add(ACLS, "--list", "--topic", T, "--resource-pattern-type", "bogus"),
             pair.add(ACLS, "--add", "--topic", "*", "--resource-pattern-type", "prefixed", "--allow-principal",
                      "User:dave", "--operation", "Read"),
             pair.add(ACLS, "--add", "--topic", T, "--allow-principal", "User:erin", "--allow-host", "not a host",
                      "--operation", "Read"),
             pair.add(ACLS, "--list", until=r"(?s)\A(?=.*User:dave)(?=.*User:erin)"),
             pair.add(FEATURES, "describe")]
    results = pair.run()
    seen = [same(r, secured, filter_=acl_blocks) for r in results[:-1]]
    assert seen[0].stdout == ""
    added = seen[1].stdout.split("\n\n")
    assert [b.splitlines()[0] for b in added] == [
        f"Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name={G}, patternType=LITERAL)`:",
        f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={T}, patternType=LITERAL)`:"]
    assert all(len(b.splitlines()) == 5 for b in added)
    listed = seen[7].stdout.split("\n\n")
    assert len(listed) == 8
    assert ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=clitools-acl, patternType=PREFIXED)`:\n"
            "(principal=User:mallory, host=10.0.0.1, operation=DESCRIBE, permissionType=DENY)") not in listed
    assert ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=clitools-acl, patternType=PREFIXED)`:\n"
            "(principal=User:mallory, host=10.0.0.1, operation=WRITE, permissionType=DENY)") in listed
    assert ("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=clitools-acl-p, patternType=LITERAL)`:\n"
            "(principal=User:con, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"
            "(principal=User:con, host=*, operation=READ, permissionType=ALLOW)\n"
            "(principal=User:pat, host=*, operation=CREATE, permissionType=ALLOW)\n"
            "(principal=User:pat, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"
            "(principal=User:pat, host=*, operation=WRITE, permissionType=ALLOW)") in listed
    assert len(seen[8].stdout.split("\n\n")) == 1 and len(seen[9].stdout.split("\n\n")) == 2
    assert "ACLs for principal `User:alice`" in seen[10].stdout and "User:bob" not in seen[10].stdout
    assert seen[11].stdout == ""
    assert "User:bob" not in seen[14].stdout and "PREFIXED" not in seen[14].stdout and "User:alice" in seen[14].stdout
    assert "You must specify one of: --allow-principal, --deny-principal" in seen[15].stderr
    assert "ResourceType GROUP only supports operations" in seen[16].stderr
    assert "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls." in seen[17].stderr
    assert "expected a string in format principalType:principalName but got alice" in seen[18].stdout
    assert "Value [bogus] is not one of [ANY|MATCH|LITERAL|PREFIXED]" in seen[19].stdout
    assert all(seen[i].code == 1 for i in range(15, 20))
    assert "host=not a host" in seen[22].stdout and "name=*, patternType=PREFIXED" in seen[22].stdout

    # kafka-features: the finalized levels' epoch is Kafka's metadata offset, groupbroker's 1
    kafka, ours = results[-1]
    assert re.findall(r"\sEpoch: (\d+)", ours.stdout) == ["1"] * 7
    assert all(int(e) > 0 for e in re.findall(r"\sEpoch: (\d+)", kafka.stdout))
    features = same(results[-1], secured, filter_=lambda t: re.sub(r"(\s)Epoch: \d+", r"\1Epoch: <n>", t))
    rows = [dict(re.findall(r"(\w+): (\S+)", line)) for line in features.lines()]
    assert [row["Feature"] for row in rows] == [
        "eligible.leader.replicas.version", "group.version", "kraft.version", "metadata.version", "share.version",
        "streams.version", "transaction.version"]
    assert rows[3] == {"Feature": "metadata.version", "SupportedMinVersion": "3.3-IV3",
                       "SupportedMaxVersion": "4.3-IV0", "FinalizedVersionLevel": "4.3-IV0", "Epoch": "<n>"}
    assert rows[6] == {"Feature": "transaction.version", "SupportedMinVersion": "0", "SupportedMaxVersion": "2",
                       "FinalizedVersionLevel": "1", "Epoch": "<n>"}
