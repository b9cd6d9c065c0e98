"""Issue 6 acceptance: a real group on a real broker, then the report's tables say what happened.

One scenario (module fixture, about 25 s) with kafka-python 3.0.12 against ``groupbroker
serve``; topic ``events`` has 2 partitions:

1. C (its own process) joins the empty group: rebalance 1 (new member), generation 1. It
   consumes the first 20 records and commits them.
2. A (static member, in this process) joins: rebalance 2 (new member); C rejoins; generation 2
   splits the partitions. 10 more records; each consumes its 5 and commits.
3. A stalls (no poll; its heartbeat thread sleeps 30 s). C is frozen (SIGSTOP). B joins:
   rebalance 3 (new member). C's session (3 s) expires during the join phase: C is expired,
   without a rebalance of its own. The join phase ends at the rebalance timeout (6 s) without
   A, which as a static member stays: generation 3 is {A, B}.
4. A commits with generation 2: ILLEGAL_GENERATION. 6 more records; B consumes and commits
   its 3; A's partition keeps 3 uncommitted.
5. The broker stops (a last log-end sample) once A's partition has gone without a commit for
   longer than its commits spanned, so its lag rule is STOP.

Then the pipeline runs in local mode on the data dir, on a compacted copy and on a copy with a
torn journal tail, and the report opens in headless Chromium.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import CommitFailedError, IllegalGenerationError

from log_store.fs import RealFS

from broker.testing.launcher import BrokerProcess
from offsets_log.journal import journal_dir, segments
from tests.support.processes import REPO, require_tool, wait_until
from offsets_log.compaction import compact
from offsets_log.log import ShardLog, shard_dir
from offsets_log.records import Record
from offsets_log.tools import records, shards
from pipeline.job import TABLES, run
from tests.support.report_member import subscribe

TOPIC, GROUP = "events", "analytics"
BROKER = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000,
          "groupbroker.journal.sample.interval.ms": 200}
REBALANCE_TIMEOUT_MS = 6000          # B's and C's max.poll.interval.ms: the 3rd join phase
#: A's heartbeat thread first wakes this long after A joined: it would find A's poll overdue and
#: leave (more rebalances), so the scenario must be over by then, however slow the machine
A_HEARTBEAT_MS = 30000


@dataclass
class Scenario:
    data_dir: str
    a: str = ""                      # member ids
    b: str = ""
    c: str = ""
    a_partition: int = -1            # A's partition in generations 2 and 3
    b_partition: int = -1
    a_error: Exception | None = None
    notes: list = field(default_factory=list)


class MemberProcess:
    """C: tests/support/report_member.py in its own process, read as JSON events."""

    def __init__(self, bootstrap: str, stderr: Path):
        self._stderr = open(stderr, "ab")
        script = Path(__file__).resolve().parent.parent / "support" / "report_member.py"
        self.proc = subprocess.Popen(
            [sys.executable, str(script), bootstrap, GROUP, TOPIC, "C", "3000", str(REBALANCE_TIMEOUT_MS)],
            stdout=subprocess.PIPE, stderr=self._stderr, stdin=subprocess.DEVNULL, text=True)
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def committed(self) -> int:
        return self.events[-1]["records"] if self.events else 0

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self._reader.join(5)
        self._stderr.close()


class Polling:
    """B: a consumer polling in a thread, committing after every batch."""

    def __init__(self, bootstrap: str):
        self.committed: dict[int, int] = {}
        self.consumer: KafkaConsumer | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(bootstrap,), daemon=True)
        self.thread.start()

    def _run(self, bootstrap: str) -> None:
        c = self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, group_id=GROUP, client_id="B", enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500,
            max_poll_interval_ms=REBALANCE_TIMEOUT_MS)
        subscribe(c, TOPIC)
        while not self._stop.is_set():
            if c.poll(timeout_ms=200):
                c.commit()
                self.committed = {tp.partition: c.position(tp) for tp in c.assignment()}

    def close(self) -> None:
        self._stop.set()
        self.thread.join(15)
        if self.consumer is not None:
            self.consumer.close(autocommit=False, timeout_ms=2000)


def _produce(producer: KafkaProducer, count: int) -> None:
    for i in range(count):
        producer.send(TOPIC, b"m%d" % i, partition=i % 2)
    producer.flush(30)


def _run_scenario(broker: BrokerProcess, s: Scenario, logs: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic(TOPIC, 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5)
    a = b = c = None
    try:
        _produce(producer, 20)
        # 1. C alone: generation 1, commits 10 + 10.
        c = MemberProcess(broker.bootstrap, logs / "C.log")
        wait_until(lambda: c.committed() == 20, 30, "C to commit the first 20 records")
        s.c = c.events[-1]["member"]
        # 2. A joins: generation 2; each consumes and commits its half of 10 more.
        a = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=GROUP, client_id="A",
                          group_instance_id="worker-a", enable_auto_commit=False,
                          auto_offset_reset="earliest", session_timeout_ms=45000,
                          heartbeat_interval_ms=A_HEARTBEAT_MS, max_poll_interval_ms=1000)
        subscribe(a, TOPIC)
        wait_until(lambda: a.poll(timeout_ms=200) is not None and a.assignment(), 30,
                   "generation 2 with A and C")
        [tp] = a.assignment()
        s.a_partition, s.b_partition = tp.partition, 1 - tp.partition
        _produce(producer, 10)
        wait_until(lambda: a.poll(timeout_ms=100) is not None and a.position(tp) == 15, 10,
                   "A to read its 5 records")
        a.commit()
        stalled_at = time.time()                          # A's last poll and commit
        s.a = a._coordinator._generation.member_id
        wait_until(lambda: c.committed() == 25, 10, "C to commit its 5 records")
        first_commit = c.events[0]["t"]
        # 3. C frozen, B joins; C expires inside the join phase, which ends without A.
        os.kill(c.proc.pid, signal.SIGSTOP)
        b = Polling(broker.bootstrap)
        broker.wait_for_log(rf"group {GROUP}: CompletingRebalance -> Stable \(generation 3,", timeout=20)
        assert time.time() - stalled_at < 12, "A's heartbeat thread may have woken and left the group"
        # 4. A's late commit, then 6 more records: B commits its 3, A's stay uncommitted.
        try:
            a.commit()
        except CommitFailedError as e:
            s.a_error = e.args[0] if e.args else e
        _produce(producer, 6)
        wait_until(lambda: b.committed.get(s.b_partition) == 18, 15, "B to commit its 3 records")
        s.b = b.consumer._coordinator._generation.member_id
        # 5. Long enough without a commit on A's partition for the STOP rule, then stop.
        span = stalled_at - first_commit
        time.sleep(max(0.0, stalled_at + span + 1.5 - time.time()))
        assert time.time() - stalled_at < A_HEARTBEAT_MS / 1000 - 1, "A's heartbeat thread may have woken"
        assert broker.stop() == 0
    finally:
        producer.close(timeout=5)
        if c is not None:
            c.kill()
        if b is not None:
            b.close()
        if a is not None:
            a.close(autocommit=False, timeout_ms=2000)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Scenario:
    root = tmp_path_factory.mktemp("report")
    broker = BrokerProcess(root / "data", root / "broker.log", BROKER).start()
    s = Scenario(str(root / "data"))
    try:
        _run_scenario(broker, s, root)
    finally:
        broker.kill()
    return s


@pytest.fixture(scope="module")
def tables(scenario, spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("report-out")
    paths = run(spark, [scenario.data_dir], str(out))
    return {name: spark.read.parquet(paths[name]) for name in TABLES}, paths


def _rows(df, **where) -> list[dict]:
    rows = [r.asDict(recursive=True) for r in df.collect()]
    return [r for r in rows if all(r[k] == v for k, v in where.items())]


def _group_log(s: Scenario) -> str:
    """The broker's log lines about the group: what a failure's reader needs first."""
    log = Path(s.data_dir).parent / "broker.log"
    return "\n".join(line for line in log.read_text().splitlines() if f"group {GROUP}" in line)


def test_scenario_happened(scenario):
    """The scenario itself: A's late commit was refused by the broker with ILLEGAL_GENERATION."""
    assert isinstance(scenario.a_error, IllegalGenerationError), scenario.a_error
    assert scenario.a and scenario.b and scenario.c


def test_rebalances(scenario, tables):
    """Exactly three rebalances, each started by a new member; C expired inside the third."""
    rows = sorted(_rows(tables[0]["rebalances"], group=GROUP), key=lambda r: r["generation"])
    assert [r["generation"] for r in rows] == [1, 2, 3], _group_log(scenario)
    assert [r["cause"] for r in rows] == ["new_member"] * 3
    assert [r["causes"] for r in rows] == [["new_member"]] * 3
    assert [r["outcome"] for r in rows] == ["stable"] * 3
    assert [r["protocol"] for r in rows] == ["range"] * 3
    s = scenario
    assert [(sorted(r["members_before"]), sorted(r["members_after"])) for r in rows] == [
        ([], [s.c]), ([s.c], sorted([s.a, s.c])), (sorted([s.a, s.c]), sorted([s.a, s.b]))]
    assert [r["removed"] for r in rows] == [
        [], [], [{"member": s.c, "event": "member_expired", "reason": "session_timeout"}]]
    assert rows[2]["leader"] == s.b
    # the third join phase lasted the rebalance timeout (A never rejoined it)
    assert REBALANCE_TIMEOUT_MS <= rows[2]["join_ms"] < REBALANCE_TIMEOUT_MS + 1000
    for r in rows:
        assert r["duration_ms"] == (r["end_time"] - r["start_time"]) // dt.timedelta(milliseconds=1)
        assert r["duration_ms"] >= r["join_ms"] >= 0
    assert {r["group_stopped_ms"] for r in rows} == {sum(r["duration_ms"] for r in rows)}


def test_member_errors(scenario, tables):
    """A: one ILLEGAL_GENERATION on OffsetCommit (sent 2, current 3); B and C: their KIP-394
    first joins; C also heard of rebalance 2 through REBALANCE_IN_PROGRESS heartbeats."""
    errors = _rows(tables[0]["member_errors"], group=GROUP)
    by_member: dict[str, dict] = {}
    for r in errors:
        by_member.setdefault(r["member"], {})[(r["api"], r["error"])] = r
    s = scenario
    assert set(by_member) == {s.a, s.b, s.c}
    late = by_member[s.a]
    assert list(late) == [("OffsetCommit", "ILLEGAL_GENERATION")]
    row = late[("OffsetCommit", "ILLEGAL_GENERATION")]
    assert (row["count"], row["generations_sent"], row["generations_current"]) == (1, [2], [3])
    assert row["first_seen"] == row["last_seen"]
    assert {k: r["count"] for k, r in by_member[s.b].items()} == {("JoinGroup", "MEMBER_ID_REQUIRED"): 1}
    c = {k: r["count"] for k, r in by_member[s.c].items()}
    assert c.pop(("JoinGroup", "MEMBER_ID_REQUIRED")) == 1
    assert set(c) == {("Heartbeat", "REBALANCE_IN_PROGRESS")} and by_member[s.c][
        ("Heartbeat", "REBALANCE_IN_PROGRESS")]["generations_current"] == [1]


def test_committed_offsets_and_lag(scenario, tables):
    """18 records per partition: B's is committed to the end, A's stops at 15 (lag 3)."""
    rows = {r["partition"]: r for r in _rows(tables[0]["committed_offsets"], group=GROUP)}
    s = scenario
    assert {p: (r["offset"], r["log_end_offset"], r["lag"]) for p, r in rows.items()} == {
        s.a_partition: (15, 18, 3), s.b_partition: (18, 18, 0)}
    assert {r["group_generation"] for r in rows.values()} == {3}


def test_lag_status(scenario, tables):
    """B's partition is caught up (OK); A's stopped committing while 3 records wait (STOP)."""
    rows = {r["partition"]: r for r in _rows(tables[0]["lag_status"], group=GROUP)}
    s = scenario
    a, b = rows[s.a_partition], rows[s.b_partition]
    assert (b["status"], b["current_lag"], b["last_offset"]) == ("OK", 0, 18)
    assert (a["status"], a["current_lag"], a["last_offset"]) == ("STOP", 3, 15)
    assert a["window_lags"][-1] == 0 and b["window_lags"][-1] == 0
    assert a["group_status"] == b["group_status"] == "STOP"


def _without_source(df) -> list:
    return sorted(map(repr, (r.asDict(recursive=True) | {"source": None} for r in df.collect())))


def _compacted_copy(data_dir: str, target: Path) -> int:
    """A copy of ``data_dir`` whose offsets logs were rewritten into small segments and
    compacted; returns how many records compaction dropped."""
    shutil.copytree(data_dir, target)
    dropped = 0
    for n in shards(data_dir, RealFS()):
        frames = list(records(data_dir, n))
        shutil.rmtree(shard_dir(str(target), n))
        log = ShardLog.for_shard(str(target), n, segment_bytes=256)
        for frame, _ in frames:
            log.append([Record(frame.key, frame.value)], frame.append_ms)
        result = compact(log, max((f.append_ms for f, _ in frames), default=0) + 1)
        dropped += result.records_in - result.records_out
        log.close()
    return dropped


def test_compaction_changes_no_answer(scenario, tables, spark, tmp_path):
    """Compacting the offsets logs changes no table: the journal keeps the history, and the
    latest commit per partition survives compaction."""
    copy = tmp_path / "compacted"
    assert _compacted_copy(scenario.data_dir, copy) > 0
    paths = run(spark, [str(copy)], str(tmp_path / "out"))
    for name in TABLES:
        assert _without_source(spark.read.parquet(paths[name])) == _without_source(tables[0][name]), name


def test_torn_journal_tail_is_skipped(scenario, tables, spark, tmp_path, caplog):
    """A journal whose last line was cut by a crash: a warning, and the same answers."""
    copy = tmp_path / "torn"
    shutil.copytree(scenario.data_dir, copy)
    directory = journal_dir(str(copy))
    last = os.path.join(directory, segments(directory)[-1][2])
    with open(last, "ab") as f:
        f.write(b'{"t":1795000000000,"shard":3,"event":"offsets_comm')
    paths = run(spark, [str(copy)], str(tmp_path / "out"))
    assert "1 torn or corrupt line(s) skipped" in caplog.text
    for name in TABLES:
        assert _without_source(spark.read.parquet(paths[name])) == _without_source(tables[0][name]), name


PROBE = """<script>window.addEventListener("load", () => {
  const drawn = [...document.images].filter(i => i.complete && i.naturalWidth > 100);
  document.title = "charts:" + drawn.map(i => i.alt).join(","); });</script>"""


def test_report_renders_in_chromium(tables, tmp_path):
    """report.html opens in headless Chromium with its five charts decoded (a probe script,
    added to a copy, lists the images the browser drew); this scenario has no consumer group,
    so the fifth says so."""
    chromium = require_tool("chromium", "apt-get install chromium (.ci/setup/report.sh)")
    page = Path(tables[1]["report"]).read_text()
    assert "<script" not in page and "http" not in page.split("<body>")[1], "must be self-contained"
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"))
    out = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
         probe.as_uri()], capture_output=True, text=True, timeout=60)
    title = out.stdout.split("<title>", 1)[1].split("</title>", 1)[0]
    assert title == ("charts:rebalance-timeline,stop-time,lag-over-time,error-sources,"
                     "consumer-reconciliation"), out.stderr[-2000:]


def test_cli_since_filters(scenario, spark, tmp_path):
    """``groupbroker report --since`` after everything happened: every table is empty, and the
    report is still written (in this process the command uses the running Spark session)."""
    from broker.cli import main

    out = tmp_path / "out"
    assert main(["report", "--data-dir", scenario.data_dir, "--out", str(out),
                 "--since", "2100-01-01T00:00:00"]) == 0
    assert all(spark.read.parquet(str(out / name)).count() == 0 for name in TABLES)
    assert (out / "report.html").stat().st_size > 10_000


def test_spark_submit(scenario, tmp_path):
    """The same job unchanged under spark-submit (local master here; a cluster is the same
    command with --master spark://...)."""
    submit = Path(sys.executable).parent / "spark-submit"
    out = tmp_path / "out"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run(
        [str(submit), "--master", "local[1]", "--conf", "spark.driver.host=127.0.0.1",
         "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.sql.shuffle.partitions=2", str(REPO / "pipeline" / "job.py"),
         "--data-dir", scenario.data_dir, "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    written = [line.split(": ")[0] for line in done.stdout.splitlines()           # (Spark merges
               if line.split(": ")[0] in (*TABLES, "report")]                      # stderr into stdout)
    assert sorted(written) == sorted([*TABLES, "report"])
    assert all((out / name / "_SUCCESS").exists() for name in TABLES)
