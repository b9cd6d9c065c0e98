"""``make bench``: groupbroker, Apache Kafka 4.3.1, franz-go's kfake and librdkafka's mock
cluster, measured in one run on this machine; the report goes to docs/performance.md, its
charts to docs/performance/.

Every peer runs as a process of its own on 127.0.0.1 (the mock in bench/mock_server.py, kfake
built from bench/kfake/ with the machine's Go), so that the same clients drive each and each
one's CPU is its own. What it measures, each section saying how:

1. start-up: from spawning the broker to its first ApiVersions answer, and to one consumer of
   a new group holding its partition (confluent-kafka, classic protocol);
2. a typical integration test: start (until the broker serves groups: groupbroker's log says
   its shards have loaded, as the pytest fixture waits; Kafka's start waits until its group
   coordinator answers), create a topic, produce 1,000 records, three consumers of one group
   consume them and commit, stop;
3. group formation: N = 1, 5, 20, 100 confluent-kafka consumers (classic and consumer protocol)
   started together, until all hold their partitions;
4. one big group: bench/big_groups.py's classic and consumer groups of 100 and 1,000 raw
   members (cold start, then one member leaves);
5. Heartbeat and 10-partition OffsetCommit throughput (bench/loadgen.py: serial and 32 in
   flight on one connection, serial on 16) and each broker's CPU per answer;
6. the coordinator load after a restart with ``--offsets`` committed offsets (distinct keys,
   committed over the wire), and memory: idle, with 10,000 groups, and holding the offsets.

Settings: groupbroker and Kafka run with the pytest fixture's settings (TEST_DEFAULTS of
broker/testing/launcher.py, Kafka's names: a 50 ms initial rebalance delay, 500 ms consumer
group heartbeats), the mock with its initial delay set to 50 ms through its C API, kfake with
its own defaults (it has no initial delay). ``--quick`` runs fewer repetitions and sizes.
Run: ``.venv/bin/python bench/performance.py [--quick] [--out docs/performance.md]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import big_groups  # noqa: E402
from startup import stop as stop_process  # noqa: E402
import trio  # noqa: E402
from apache_kafka.process import KafkaProcess, free_port  # noqa: E402
from broker.testing.launcher import SHARDS_LOADED, TEST_DEFAULTS  # noqa: E402
from kafka_client.blocking import BlockingClient  # noqa: E402
from protocol import REQUESTS  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.errors import ErrorCode  # noqa: E402
from tests.support.go_clients import driver  # noqa: E402

PY = sys.executable
PEERS = ("groupbroker", "Kafka 4.3.1", "kfake", "librdkafka mock")
LOADGEN_TOPIC = "bench-60"


def log(msg: str) -> None:
    sys.stderr.write(f"[performance {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# --- the peers ---------------------------------------------------------------------------

@dataclass
class Running:
    """One broker, started and serving."""
    name: str
    bootstrap: str
    pid: int
    first_answer: float                       # seconds from the spawn to an ApiVersions answer
    stop: Callable[[], None]
    topic: Callable[[str, int], None]
    restart: Callable[[], float] | None = None     # returns seconds until every group is served
    notes: dict = field(default_factory=dict)

    @property
    def port(self) -> int:
        return int(self.bootstrap.split(",")[0].rpartition(":")[2])

    def alive(self) -> bool:
        return Path(f"/proc/{self.pid}").exists() and "zombie" not in Path(f"/proc/{self.pid}/status").read_text()

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise KeyError("VmRSS")


def first_answer(port: int, since: float, timeout: float = 120.0) -> float:
    """Seconds from ``since`` until ApiVersions on ``port`` is answered (asked every 2 ms)."""
    deadline = since + timeout
    while True:
        try:
            client = BlockingClient("127.0.0.1", port, client_id="bench-start", timeout=5)
        except OSError:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"nothing answers on {port} after {timeout:.0f}s")
            time.sleep(0.002)
            continue
        try:
            client.negotiate()
            return time.perf_counter() - since
        finally:
            client.close()


def admin_topic(bootstrap: str) -> Callable[[str, int], None]:
    def create(name: str, partitions: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            try:
                future.result(60)
            except Exception as e:   # noqa: BLE001 - an existing topic is fine
                if "TOPIC_ALREADY_EXISTS" not in str(e):
                    raise
        for _ in range(600):
            md = admin.list_topics(name, timeout=10).topics.get(name)
            if md is not None and md.error is None and len(md.partitions) == partitions:
                return
            time.sleep(0.05)
        raise RuntimeError(f"topic {name} not visible on {bootstrap}")
    return create


def _close_stdin(proc: subprocess.Popen) -> None:
    """Stop a peer that ends when its standard input closes (kfake, the mock)."""
    try:
        proc.stdin.close()
    except OSError:                    # it died already
        pass
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_groupbroker(work: Path, *, loaded: bool = False) -> Running:
    """``loaded``: return once its log says every coordinator shard has loaded, as the pytest
    fixture waits (a group whose shard still loads is answered COORDINATOR_LOAD_IN_PROGRESS,
    and a client retries that a second later)."""
    data, port = work / f"gb-{uuid.uuid4().hex[:6]}", free_port()
    cmd = [PY, "-m", "broker", "serve", "--port", str(port), "--data-dir", str(data)]
    for k, v in TEST_DEFAULTS.items():
        cmd += ["-o", f"{k}={v}"]
    log_file = open(work / "groupbroker.log", "ab")
    log_start = log_file.tell()
    spawned = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log_file, stdin=subprocess.DEVNULL)
    took = first_answer(port, spawned)
    while loaded and not SHARDS_LOADED.search((work / "groupbroker.log").read_text(errors="replace")
                                              [log_start:]):
        time.sleep(0.002)

    def restart() -> float:
        stop_process(proc)
        began = time.perf_counter()
        running.pid = (new := subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log_file,
                                               stdin=subprocess.DEVNULL)).pid
        procs[0] = new
        return began

    procs = [proc]
    running = Running("groupbroker", f"127.0.0.1:{port}", proc.pid, took,
                      lambda: (stop_process(procs[0]), log_file.close()), admin_topic(f"127.0.0.1:{port}"))
    running.restart = restart
    return running


def start_kafka(work: Path) -> Running:
    kafka = KafkaProcess(work / f"kafka-{uuid.uuid4().hex[:6]}", dict(TEST_DEFAULTS))
    launched: list[float] = []
    launch = kafka._launch

    def timed_launch() -> None:
        launched.append(time.perf_counter())
        launch()
    kafka._launch = timed_launch
    answered: list[float] = []

    def watch() -> None:            # the first ApiVersions answer, while start() waits for more
        while kafka.port is None or not launched:
            time.sleep(0.002)
        answered.append(first_answer(kafka.port, launched[0]))
    watcher = threading.Thread(target=watch, daemon=True)
    spawned = time.perf_counter()
    watcher.start()
    kafka.start()
    watcher.join(120)
    fmt = launched[0] - spawned
    running = Running("Kafka 4.3.1", kafka.bootstrap_servers, kafka.proc.pid, fmt + answered[0], kafka.stop,
                      admin_topic(kafka.bootstrap_servers), notes={"format_s": fmt})

    def restart() -> float:
        kafka.stop()
        began = time.perf_counter()
        kafka._launch()
        running.pid = kafka.proc.pid
        return began
    running.restart = restart
    return running


def start_kfake(work: Path) -> Running:
    binary = driver("kfake", REPO / "bench" / "kfake")
    port = free_port()
    spawned = time.perf_counter()
    proc = subprocess.Popen([str(binary), "--port", str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=open(work / "kfake.log", "ab"))
    took = first_answer(port, spawned)
    return Running("kfake", f"127.0.0.1:{port}", proc.pid, took,
                   lambda: _close_stdin(proc), admin_topic(f"127.0.0.1:{port}"))


def start_mock(work: Path) -> Running:
    spawned = time.perf_counter()
    proc = subprocess.Popen([PY, str(REPO / "bench" / "mock_server.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=open(work / "mock.log", "ab"), text=True)
    words = proc.stdout.readline().split()
    if words[:3] != ["mock", "listening", "on"]:
        raise RuntimeError(f"the mock did not start: {words}")
    bootstrap, ready_in = words[3], float(words[5])
    spawn_to_ready = time.perf_counter() - spawned
    lock = threading.Lock()

    def command(line: str) -> None:
        with lock:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            if proc.stdout.readline().strip() != "ok":
                raise RuntimeError(f"mock: {line} failed")
    command("delay 50")
    # a test creates the mock inside a Python process that is already running: its start-up is
    # the creation (ready_in: confluent-kafka's client lists the mock's brokers, so it answers)
    return Running("librdkafka mock", bootstrap, proc.pid, ready_in, lambda: _close_stdin(proc),
                   lambda name, n: command(f"topic {name} {n}"), notes={"spawn_to_ready_s": spawn_to_ready})


STARTERS = {"groupbroker": start_groupbroker, "Kafka 4.3.1": start_kafka, "kfake": start_kfake,
            "librdkafka mock": start_mock}


# --- client-level measurements -------------------------------------------------------------

def consumers_hold(bootstrap: str, topic: str, partitions: int, n: int, protocol: str,
                   timeout: float = 120.0) -> float:
    """Seconds from creating ``n`` confluent-kafka consumers of a new group until they hold
    every partition of ``topic`` between them, once each."""
    from confluent_kafka import Consumer
    group = f"form-{uuid.uuid4().hex[:8]}"
    holds: list[set] = [set() for _ in range(n)]
    lock = threading.Lock()
    done = threading.Event()
    started = time.perf_counter()
    finished: list[float] = []

    def check() -> None:
        with lock:
            held = [p for h in holds for p in h]
            if len(held) == partitions and len(set(held)) == partitions and all(holds) and not done.is_set():
                finished.append(time.perf_counter())
                done.set()

    def member(i: int) -> None:
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "client.id": f"form-{i}", "log_level": 3}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"

        def assigned(c, parts):
            with lock:
                holds[i] |= {p.partition for p in parts}
            check()

        def revoked(c, parts):
            with lock:
                holds[i] -= {p.partition for p in parts}
        c = Consumer(conf)
        c.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        while not stop.is_set():
            c.poll(0.05)
        c.close()

    stop = threading.Event()
    threads = [threading.Thread(target=member, args=(i,), daemon=True) for i in range(min(n, partitions))]
    for t in threads:
        t.start()
    ok = done.wait(timeout)
    stop.set()
    for t in threads:
        t.join(30)
    if not ok:
        raise RuntimeError(f"{n} consumers ({protocol}) did not hold every partition in {timeout:.0f}s")
    return finished[0] - started


def typical_test(name: str, work: Path) -> float:
    """Start, topic, 1,000 records, three consumers consume and commit, stop: seconds."""
    import typical_test as typical
    t0 = time.perf_counter()
    peer = start_groupbroker(work, loaded=True) if name == "groupbroker" else STARTERS[name](work)
    try:
        peer.topic(typical.TOPIC, typical.PARTITIONS)
        typical.produce(peer.bootstrap)
        typical.consume_and_commit(peer.bootstrap, f"typical-{uuid.uuid4().hex[:6]}")
    finally:
        peer.stop()
    return time.perf_counter() - t0


# --- wire-level measurements ---------------------------------------------------------------

def rate(peer: Running, api: str, conns: int, inflight: int, seconds: float) -> dict:
    before = peer.cpu_seconds()
    cmd = [PY, str(REPO / "bench" / "loadgen.py"), "rate", "--port", str(peer.port), "--api", api,
           "--conns", str(conns), "--inflight", str(inflight), "--seconds", str(seconds),
           "--warmup", "0.3", "--topic", LOADGEN_TOPIC, "--tag", f"perf-{uuid.uuid4().hex[:6]}"]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300 + seconds)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    doc = json.loads(out.stdout.strip().splitlines()[-1])
    cpu = peer.cpu_seconds() - before
    doc["cpu_us_per_answer"] = cpu * 1e6 / max(1, doc["requests"] + doc["rate"] * 0.3)
    return doc


OffsetCommit = REQUESTS[ApiKey.OFFSET_COMMIT].cls
OffsetFetch = REQUESTS[ApiKey.OFFSET_FETCH].cls


def commit_offsets(peer: Running, topic: str, groups: int, partitions: int) -> None:
    """``groups`` x ``partitions`` distinct committed offsets, one simple commit per group."""
    client = BlockingClient("127.0.0.1", peer.port, client_id="bench-offsets", timeout=120)
    try:
        client.negotiate()
        t = OffsetCommit.OffsetCommitRequestTopic
        parts = tuple(t.OffsetCommitRequestPartition(partition_index=p, committed_offset=p + 1,
                                                     committed_metadata="") for p in range(partitions))
        for g in range(groups):
            answer = client.call(ApiKey.OFFSET_COMMIT, 8, OffsetCommit(
                group_id=f"offsets-{g}", generation_id_or_member_epoch=-1, member_id="",
                topics=(t(name=topic, partitions=parts),)))
            bad = {p.error_code for tt in answer.topics for p in tt.partitions} - {0}
            if bad:
                raise RuntimeError(f"{peer.name}: OffsetCommit errors {bad}")
    finally:
        client.close()


def until_groups_served(port: int, groups: int, topic: str, since: float, timeout: float = 600.0) -> float:
    """Seconds from ``since`` until OffsetFetch answers every one of the groups with its offset
    of partition 0 (asked every 50 ms, for one partition each: the asking must not take the
    CPU the load needs)."""
    deadline = since + timeout
    names = [f"offsets-{g}" for g in range(groups)]
    while True:
        try:
            client = BlockingClient("127.0.0.1", port, client_id="bench-load", timeout=60)
            client.negotiate()
        except OSError:
            if time.perf_counter() > deadline:
                raise RuntimeError("the broker did not come back")
            time.sleep(0.01)
            continue
        try:
            pending = names
            while pending:
                first = OffsetFetch.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=topic, partition_indexes=(0,))
                answer = client.call(ApiKey.OFFSET_FETCH, 8, OffsetFetch(groups=tuple(
                    OffsetFetch.OffsetFetchRequestGroup(group_id=g, topics=(first,)) for g in pending)))
                served = {g.group_id for g in answer.groups if g.error_code == ErrorCode.NONE
                          and g.topics and g.topics[0].partitions[0].committed_offset >= 0}
                pending = [g for g in pending if g not in served]
                if pending and time.perf_counter() > deadline:
                    raise RuntimeError(f"{len(pending)} groups not served after {timeout:.0f}s")
                if pending:
                    time.sleep(0.05)
            return time.perf_counter() - since
        finally:
            client.close()


# --- the run -------------------------------------------------------------------------------

def median(values: list[float]) -> float:
    return statistics.median(values)


def why(e: BaseException) -> str:
    """The first real failure inside (nested) exception groups, in one line."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"[:240]


def formation(peer: Running, sizes: list[int], quick: bool, results: dict) -> None:
    peer.topic("formation", 100)
    for protocol in ("classic", "consumer"):
        for n in sizes:
            try:
                took = median([consumers_hold(peer.bootstrap, "formation", 100, n, protocol)
                               for _ in range(1 if n == 100 or quick else 2)])
            except Exception as e:   # noqa: BLE001
                took = f"failed: {why(e)}"
            results.setdefault("formation", {}).setdefault(protocol, {}).setdefault(str(n), {})[peer.name] = took
            log(f"{peer.name}: {n} {protocol} consumers: {took}")


def rates(peer: Running, quick: bool, results: dict) -> None:
    peer.topic(LOADGEN_TOPIC, 60)
    for api in ("heartbeat", "commit"):
        for conns, inflight in ((1, 1), (1, 32), (16, 1)):
            try:
                doc = rate(peer, api, conns, inflight, 1.0 if quick else 3.0)
            except Exception as e:   # noqa: BLE001
                doc = {"failed": why(e)}
            results.setdefault("rates", {}).setdefault(api, {}).setdefault(f"{conns}x{inflight}", {})[peer.name] = doc
            log(f"{peer.name}: {api} {conns} conns x {inflight}: {doc.get('rate', doc)}")


def load(peer: Running, offsets: int, results: dict) -> None:
    if peer.restart is None:           # kept in memory only: nothing to load
        return
    groups = offsets // 1000
    peer.topic("offsets-1000", 1000)
    began = time.perf_counter()
    commit_offsets(peer, "offsets-1000", groups, 1000)
    wrote = time.perf_counter() - began
    rss_with = peer.rss_mb()
    since = peer.restart()
    loaded = until_groups_served(peer.port, groups, "offsets-1000", since)
    results.setdefault("load", {})[peer.name] = {"offsets": groups * 1000, "commit_s": wrote,
                                                 "restart_to_served_s": loaded, "rss_with_offsets_mb": rss_with,
                                                 "rss_after_reload_mb": peer.rss_mb()}
    log(f"{peer.name}: {groups * 1000:,} offsets reloaded in {loaded:.2f}s")


def big_group_runs(peer: Running, sizes: list[int], results: dict) -> None:
    for kind in ("classic", "consumer"):
        for n in sizes:
            if not peer.alive():
                raise RuntimeError(f"{peer.name} died")
            parts = 10_000 if kind == "classic" else 2 * n
            big_groups.TOPIC = f"big-{kind}-{n}"
            try:
                if kind == "consumer":
                    peer.topic(big_groups.TOPIC, parts)
                big_groups.raise_fd_limit(4 * n + 256)
                took = trio.run(big_groups.one_group, peer.port, kind, n, parts, 0.5, 300.0)
            except Exception as e:   # noqa: BLE001
                took = {"failed": why(e)}
            results.setdefault("big_groups", {}).setdefault(kind, {}).setdefault(str(n), {})[peer.name] = took
            log(f"{peer.name}: big {kind} group of {n}: {took}")


def measure(args, work: Path) -> dict:
    results: dict = {"peers": list(args.peers)}
    reps = 2 if args.quick else 3
    # 1. start-up, 2. a typical test: fresh brokers each time
    for name in args.peers:
        starts, groups = [], []
        for _ in range(reps if name != "Kafka 4.3.1" else 2):
            peer = STARTERS[name](work)
            try:
                starts.append(peer.first_answer)
                topic = f"first-{uuid.uuid4().hex[:6]}"
                peer.topic(topic, 1)
                groups.append(consumers_hold(peer.bootstrap, topic, 1, 1, "classic"))
                results.setdefault("startup_notes", {})[name] = peer.notes
            finally:
                peer.stop()
        typical, failed = [], []
        while len(typical) < (reps if name != "Kafka 4.3.1" else 1) and len(failed) < 3:
            try:
                typical.append(typical_test(name, work))
            except Exception as e:   # noqa: BLE001 - a run the broker failed is counted, not timed
                failed.append(why(e))
        results.setdefault("startup", {})[name] = {
            "first_answer": median(starts), "first_group_after_answer": median(groups),
            "typical_test": median(typical) if typical else f"failed: {failed[0]}", "typical_failures": failed}
        log(f"{name}: first answer {median(starts):.3f}s, typical test {typical} ({len(failed)} failed)")
    # 3.-6. one broker of each kind for the rest, started again if a section left it dead
    sizes = [1, 5, 20] if args.quick else [1, 5, 20, 100]
    big = [100] if args.quick else [100, 1000]
    for name in args.peers:
        peer = STARTERS[name](work)
        results.setdefault("rss_idle_mb", {})[name] = peer.rss_mb()
        sections = (("formation", lambda p: formation(p, sizes, args.quick, results)),
                    ("rates", lambda p: rates(p, args.quick, results)),
                    ("load", lambda p: load(p, args.offsets, results)),
                    ("big groups", lambda p: big_group_runs(p, big, results)))
        for section, run in sections:
            if not peer.alive():
                log(f"{name} died: starting it again for {section}")
                peer = STARTERS[name](work)
            try:
                run(peer)
            except Exception as e:   # noqa: BLE001 - what a peer cannot do is reported
                results.setdefault("failures", {}).setdefault(name, {})[section] = why(e)
                log(f"{name}: {section} failed: {why(e)}")
        peer.stop()
    return results


# --- the report ----------------------------------------------------------------------------

def fmt(v, digits: int = 2) -> str:
    if isinstance(v, (int, float)):
        return f"{v:,.{digits}f}"
    if isinstance(v, dict) and "failed" in v:
        return "failed"
    if isinstance(v, str):
        return "failed" if v.startswith("failed") else v
    return "-"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def charts(results: dict, out_dir: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    peers = results["peers"]
    made = []

    def bars(name: str, title: str, ylabel: str, series: dict[str, float], log_scale: bool = False):
        fig, ax = plt.subplots(figsize=(6, 3.2))
        names = [p for p in peers if isinstance(series.get(p), (int, float))]
        ax.bar(names, [series[p] for p in names], color=["#2b8cbe", "#e34a33", "#31a354", "#756bb1"][:len(names)])
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        if log_scale:
            ax.set_yscale("log")
        fig.tight_layout()
        fig.savefig(out_dir / f"{name}.png", dpi=110)
        plt.close(fig)
        made.append(name)

    s = results["startup"]
    bars("first_answer", "Start to first answer", "seconds", {p: s[p]["first_answer"] for p in s}, True)
    bars("typical_test", "A typical integration test", "seconds", {p: s[p]["typical_test"] for p in s})
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    for ax, protocol in zip(axes, ("classic", "consumer")):
        by_n = results["formation"][protocol]
        for p in peers:
            xs = [int(n) for n in by_n if isinstance(by_n[n].get(p), (int, float))]
            ax.plot(xs, [by_n[str(n)][p] for n in xs], marker="o", label=p)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"Group formation ({protocol} protocol)")
        ax.set_xlabel("consumers")
    axes[0].set_ylabel("seconds")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "formation.png", dpi=110)
    plt.close(fig)
    made.append("formation")
    for api in ("heartbeat", "commit"):
        cell = results["rates"][api]["1x1"]
        bars(f"{api}_serial", f"{api.title()} serial, one connection", "answers per second",
             {p: cell[p].get("rate") for p in cell if "rate" in cell[p]})
    return made


def report(results: dict, out: Path, quick: bool) -> str:
    peers = results["peers"]
    cpu = os.cpu_count()
    lines = [
        "# Performance: groupbroker beside Apache Kafka, kfake and librdkafka's mock",
        "",
        f"Generated by `make bench` (bench/performance.py{' --quick' if quick else ''}) on "
        f"{time.strftime('%Y-%m-%d')}: {platform.machine()}, {cpu} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}. Peers, each a process of its own on 127.0.0.1, "
        "measured in the same run: groupbroker (`groupbroker serve`), Apache Kafka 4.3.1 (KRaft, one "
        "node, JVM 17), franz-go's kfake (bench/kfake/, built with the machine's Go), librdkafka's mock "
        "cluster (confluent-kafka's, bench/mock_server.py). groupbroker and Kafka use the pytest "
        "fixture's settings; the mock's initial rebalance delay is set to 50 ms; kfake runs with its "
        "defaults. Lower is better unless a column says otherwise. Regenerate with `make bench`.",
        "",
        "## Start-up and a typical test",
        "",
        "Start to first answer: from spawning the broker to its first ApiVersions answer (Kafka: "
        "`kafka-storage format` included, as a fresh Kafka needs it; the mock: creating it in a "
        "running Python process, as a test does). First group: then, one confluent-kafka consumer "
        "of a new group until it holds its partition. Typical test: start, topic, 1,000 records, three "
        "consumers consume and commit, stop.",
        "",
    ]
    s = results["startup"]
    lines.append(md_table(["peer", "start to first answer, s", "first group after that, s", "typical test, s",
                           "typical tests that failed"],
                          [[p, fmt(s[p]["first_answer"], 3), fmt(s[p]["first_group_after_answer"], 3),
                            fmt(s[p]["typical_test"]), "; ".join(s[p]["typical_failures"]) or "none"]
                           for p in peers if p in s]))
    lines += ["", "![start](performance/first_answer.png) ![typical](performance/typical_test.png)", "",
              "## Group formation", "",
              "N confluent-kafka consumers of a new group on a 100-partition topic, started together, "
              "until they hold every partition between them (seconds).", ""]
    for protocol in ("classic", "consumer"):
        by_n = results["formation"][protocol]
        lines += [f"{protocol} protocol:", ""]
        lines.append(md_table(["consumers", *peers], [[n, *(fmt(by_n[n].get(p)) for p in peers)] for n in by_n]))
        lines.append("")
    lines += ["![formation](performance/formation.png)", "", "## One big group", "",
              "bench/big_groups.py: raw members, one connection each, heartbeats every 500 ms; classic: "
              "the leader assigns 10,000 partitions (range), with the fixture's initial rebalance delay "
              "of 50 ms (Kafka's default of 3 s adds about 3 s to every cold start, on both); consumer: "
              "two partitions per member, the broker's assignor. Seconds until every member holds its "
              "final assignment.", ""]
    rows = []
    for kind, by_n in results["big_groups"].items():
        for n, by_peer in by_n.items():
            for case in ("cold", "after_leave"):
                rows.append([f"{kind}, {n} members, {case.replace('_', ' ')}",
                             *(fmt(by_peer.get(p, {}).get(case) if "failed" not in by_peer.get(p, {})
                                   else by_peer[p]) for p in peers)])
    lines.append(md_table(["group", *peers], rows))
    lines += ["", "## Requests per second and CPU per answer", "",
              "bench/loadgen.py in a process of its own: Heartbeat v4 of a one-member Stable group and "
              "OffsetCommit v8 of 10 partitions; one connection serial, one with 32 in flight, 16 "
              "serial; CPU is the broker process's own (user + system) per answer.", ""]
    rows = []
    for api, cells in results["rates"].items():
        for cell, by_peer in cells.items():
            conns, inflight = cell.split("x")
            label = f"{api}, {conns} conn{'s' if conns != '1' else ''}, {'serial' if inflight == '1' else inflight + ' in flight'}"
            rows.append([label, *(f"{fmt(by_peer[p].get('rate'), 0)} ({fmt(by_peer[p].get('cpu_us_per_answer'), 0)} µs)"
                                  if p in by_peer and "rate" in by_peer[p] else "failed" for p in peers)])
    lines.append(md_table(["requests/s (CPU µs per answer)", *peers], rows))
    lines += ["", "![heartbeat](performance/heartbeat_serial.png) ![commit](performance/commit_serial.png)", "",
              "## Coordinator load after a restart, and memory", ""]
    load = results.get("load", {})
    if load:
        lines.append(f"{next(iter(load.values()))['offsets']:,} distinct committed offsets (1,000 groups x "
                     "1,000 partitions, committed over the wire), then a restart: seconds until OffsetFetch "
                     "answers every group with its offsets (Kafka: its JVM start included).")
        lines.append("")
        lines.append(md_table(["peer", "commit all, s", "restart to all served, s", "RSS holding them, MB",
                               "RSS after the reload, MB"],
                              [[p, fmt(v["commit_s"]), fmt(v["restart_to_served_s"]), fmt(v["rss_with_offsets_mb"], 0),
                                fmt(v["rss_after_reload_mb"], 0)] for p, v in load.items()]))
    lines += ["", md_table(["peer", "RSS idle, MB"], [[p, fmt(results["rss_idle_mb"].get(p), 0)] for p in peers]), ""]
    failures = [f"- {p}, {what}: {why}" for p, by_section in results.get("failures", {}).items()
                for what, why in by_section.items()]
    failures += [f"- {p}, {kind} group of {n}: {by_peer[p]['failed']}" for kind, by_n in results["big_groups"].items()
                 for n, by_peer in by_n.items() for p in by_peer if "failed" in by_peer[p]]
    if failures:
        lines += ["## What a peer could not do", "", *failures, ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--offsets", type=int, default=1_000_000, help="committed offsets for the load (multiple of 1000)")
    parser.add_argument("--out", default=str(REPO / "docs" / "performance.md"))
    parser.add_argument("--json", help="also write the raw results here")
    parser.add_argument("--from-json", help="write the report from the raw results of an earlier run")
    args = parser.parse_args()
    args.peers = [p for p in args.peers.split(",") if p]
    if args.from_json:                     # the report again, from a run's raw results
        results = json.loads(Path(args.from_json).read_text())
    else:
        with tempfile.TemporaryDirectory(prefix="bench-performance-") as work:
            results = measure(args, Path(work))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    out = Path(args.out)
    charts(results, out.parent / "performance")
    out.write_text(report(results, out, args.quick))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
