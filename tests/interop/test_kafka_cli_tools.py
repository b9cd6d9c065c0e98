"""Apache Kafka's own command-line tools (kafka-tools 4.3.1) against groupbroker and against
Apache Kafka 4.3.1 itself (issue 27): the same calls, in the same order, to both brokers, and
their stdout, stderr and exit codes compared once normalised.

The tools run as ``java -cp <Kafka's jars>/* <main class> ...`` would run them, but several to a
JVM: ``kafka_cli_tools/ToolBatch.java`` calls each tool's ``main`` with its own stdout, stderr
and stdin and keeps the exit code its ``Exit.exit`` asks for (a JVM start costs about a second).

What is normalised (:func:`normalised`), and nothing else:

* each broker's port (``127.0.0.1:<port>``) becomes ``127.0.0.1:PORT``;
* member ids the test's consumers were given become ``<member:client-id>``;
* topic ids (``TopicId: ...``) and producer ids chosen by the broker become ``<id>``;
* stack frames of the batch runner's reflective call of ``main`` (not the tool's: how the JVM
  calls a method by reflection changes after a few calls);
* log4j's timestamp at the start of a log line becomes ``[TIME]``;
* group listings keep only this module's groups (``clitools-``...): the oracle brokers are
  shared with the other tests of the run;
* ``Elr: N/A`` / ``LastKnownElr: N/A`` of kafka-topics --describe (groupbroker does not serve
  DescribeTopicPartitions: docs/kafka-differences.md), asserted before it is normalised.

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
    """A function running a list of (main class, args, stdin) in one JVM; results in order."""
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
        calls_file.write_text(json.dumps([{"main": m, "args": a, "stdin": s} for m, a, s in calls]))
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

    def add(self, main: str, *args: str, stdin: str = "", server_flag: str = "--bootstrap-server") -> int:
        self.calls.append((main, list(args), stdin, server_flag))
        return len(self.calls) - 1

    def run(self) -> list[tuple[Result, Result]]:
        flat = []
        for main, args, stdin, flag in self.calls:
            for name in ("kafka", "ours"):
                flat.append((main, [flag, f"127.0.0.1:{self.ports[name]}", *args], stdin))
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
    return text


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
