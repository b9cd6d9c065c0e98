"""End-to-end benchmark: our broker against the librdkafka mock cluster, in one run.

Starts ``python -m broker serve --port 0`` (group.initial.rebalance.delay.ms=0) in a temporary
data dir and, in this process, the librdkafka mock cluster (confluent-kafka's
``test.mock.num.brokers=1`` on a Producer kept alive for the whole run). The mock's own
initial rebalance delay (3000 ms, not settable through any config property) is set to 0
through librdkafka's C API ``rd_kafka_mock_group_initial_rebalance_delay_ms`` via ctypes.
Then it measures and prints:

1. seconds from the first subscribe until N = 1, 5, 20 consumers of one group on a
   60-partition topic all hold an assignment (confluent-kafka on both brokers, kafka-python
   3.0.12 on ours; the median of 3 runs);
2. requests per second of Heartbeat v4 and OffsetCommit v8 (10 partitions; each broker
   with its default flush settings, ``--set log.flush.interval.messages=1`` for ours to fsync
   every commit before its answer) from bench/loadgen.py in a separate process, 1/16/64 connections, serial and
   32 in flight;
3. the peak RSS (VmHWM) of our broker holding 10,000 groups of 5 members.

Every ratio is ours/mock. ``--baseline REV`` also runs the broker of git revision REV (unpacked
from this repository) and reports the request rates ours/REV, all in one run.
Run: ``.venv/bin/python bench/e2e.py [--quick] [--baseline REV]``.
Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from broker.testing.launcher import BrokerProcess  # noqa: E402

PY = sys.executable
LOADGEN = str(REPO / "bench" / "loadgen.py")
TOPIC = "bench-60"
PARTITIONS = 60
SESSION_MS = 10_000          # consumers, both brokers (the mock waits session-1 s in a rebalance)
HEARTBEAT_MS = 3_000         # librdkafka's and kafka-python's default


def log(msg: str) -> None:
    sys.stderr.write(f"[e2e {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# --- the two brokers -----------------------------------------------------------------------

class OurBroker(BrokerProcess):
    """Our broker for the benchmark: the shared launcher, plus its memory figures."""

    def __init__(self, workdir: str, overrides: dict, repo: Path = REPO):
        os.makedirs(workdir, exist_ok=True)
        super().__init__(os.path.join(workdir, "data"), os.path.join(workdir, "broker.log"), overrides,
                         repo=repo)
        self.start()

    def status(self, key: str) -> int:
        """A /proc/<pid>/status memory figure, in kB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise KeyError(key)


def checkout(rev: str, workdir: str) -> Path:
    """The tree of git revision ``rev`` of this repository, unpacked under ``workdir`` (the
    broker of another revision runs from there, on this virtualenv)."""
    tree = Path(workdir) / f"checkout-{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


class MockCluster:
    """librdkafka's mock cluster, alive as long as the Producer that owns it."""

    def __init__(self, initial_delay_ms: int | None = 0, brokers: int = 1):
        import confluent_kafka
        from confluent_kafka import Producer
        self.holder = Producer({"test.mock.num.brokers": brokers, "client.id": "mock-holder",
                                "log_level": 3})
        found = sorted(self.holder.list_topics(timeout=10).brokers.values(), key=lambda b: b.id)
        self.addresses = [f"{b.host}:{b.port}" for b in found]
        self.host, self.port = found[0].host, found[0].port
        assert all(b.host == "127.0.0.1" for b in found), found
        self.delay_note = "librdkafka default (3000 ms)"
        self._lib = self._mc = None
        problem = self._find_mock(confluent_kafka)
        if problem:
            self.delay_note = f"NOT SET ({problem}): 3000 ms"
        elif initial_delay_ms is not None:
            self.delay_note = self._set_initial_delay(initial_delay_ms)

    def _find_mock(self, ck) -> str | None:
        """The mock cluster's C handle (self._lib, self._mc), through ctypes; or what failed."""
        libs = glob.glob(os.path.join(os.path.dirname(ck.__file__), "..", "confluent_kafka.libs",
                                      "librdkafka*.so*"))
        if not libs:
            return "bundled librdkafka not found"
        lib = ctypes.CDLL(libs[0])
        # confluent_kafka's Handle object: PyObject_HEAD, then rd_kafka_t *rk
        rk = ctypes.c_void_p.from_address(id(self.holder) + 2 * ctypes.sizeof(ctypes.c_void_p)).value
        lib.rd_kafka_name.restype, lib.rd_kafka_name.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        if lib.rd_kafka_name(rk) != b"mock-holder#producer-1" and not lib.rd_kafka_name(rk).startswith(b"mock-holder#"):
            return "could not find the rd_kafka_t handle"
        lib.rd_kafka_handle_mock_cluster.restype = ctypes.c_void_p
        lib.rd_kafka_handle_mock_cluster.argtypes = [ctypes.c_void_p]
        mc = lib.rd_kafka_handle_mock_cluster(rk)
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        assert set(lib.rd_kafka_mock_cluster_bootstraps(mc).decode().split(",")) == set(self.addresses)
        lib.rd_kafka_mock_topic_create.restype = ctypes.c_int
        lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        self._lib, self._mc = lib, mc
        return None

    def _set_initial_delay(self, delay_ms: int) -> str:
        """No config property exists; call rd_kafka_mock_group_initial_rebalance_delay_ms()."""
        lib = self._lib
        lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [ctypes.c_void_p, ctypes.c_int32]
        lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._mc, delay_ms)
        return f"{delay_ms} ms (set via rd_kafka_mock_group_initial_rebalance_delay_ms, ctypes)"

    @property
    def bootstrap(self) -> str:
        return ",".join(self.addresses)

    def coordinator_set(self, key_type: str, key: str, broker_id: int) -> None:
        """Move the coordinator of a group (``key_type`` "group") or transactional id
        ("transaction"): rd_kafka_mock_coordinator_set."""
        lib = self._lib
        lib.rd_kafka_mock_coordinator_set.restype = ctypes.c_int
        lib.rd_kafka_mock_coordinator_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                                      ctypes.c_int32]
        err = lib.rd_kafka_mock_coordinator_set(self._mc, key_type.encode(), key.encode(), broker_id)
        if err:
            raise RuntimeError(f"rd_kafka_mock_coordinator_set: error {err}")

    def push_broker_errors(self, broker_id: int, api_key: int, error: int, count: int) -> None:
        """The next ``count`` requests of ``api_key`` to broker ``broker_id`` are answered
        ``error`` (rd_kafka_mock_broker_push_request_error_rtts, no added latency)."""
        pairs = [arg for _ in range(count) for arg in (ctypes.c_int(error), ctypes.c_int64(0))]
        err = self._lib.rd_kafka_mock_broker_push_request_error_rtts(
            ctypes.c_void_p(self._mc), ctypes.c_int32(broker_id), ctypes.c_int16(api_key), ctypes.c_size_t(count),
            *pairs)
        if err:
            raise RuntimeError(f"rd_kafka_mock_broker_push_request_error_rtts: error {err}")

    def close(self) -> None:
        """Destroy the mock cluster, with the Producer that owns it."""
        self._lib = self._mc = None
        holder, self.holder = self.holder, None
        holder.flush(0)
        del holder                   # the last reference: rd_kafka_destroy() runs here

    def create_topic(self, name: str, partitions: int) -> None:
        """AdminClient.create_topics hangs on this mock ("waiting for controller": its Metadata
        names no usable controller), so use the mock's C API rd_kafka_mock_topic_create."""
        err = self._lib.rd_kafka_mock_topic_create(self._mc, name.encode(), partitions, 1)
        if err:
            raise RuntimeError(f"rd_kafka_mock_topic_create: error {err}")
        from confluent_kafka.admin import AdminClient
        md = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(name, timeout=10)
        assert len(md.topics[name].partitions) == partitions


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], operation_timeout=10).values():
        fut.result(20)
    for _ in range(100):
        md = admin.list_topics(TOPIC, timeout=10)
        t = md.topics.get(TOPIC)
        if t is not None and t.error is None and len(t.partitions) == PARTITIONS:
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {TOPIC} not visible on {bootstrap}")


# --- 1. rebalance time ---------------------------------------------------------------------

def _assign_time(n: int, make, subscribe, drive, close, timeout: float = 40.0, *,
                 formed=None, make_in_threads: bool = False) -> float:
    """Each consumer polls in its own thread; the clock stops once all hold an assignment, as
    their rebalance callbacks report (``subscribe(c, holds)``; ``holds(bool)`` on every
    assignment and revocation), so the poll timeout does not blur the measurement.

    ``formed()``, if given, must also be true (e.g. the assignments are those of one
    generation). With ``make_in_threads`` each thread creates its consumer after the start
    (the clock then includes the clients' construction and bootstrap); otherwise they are all
    created before the clock starts."""
    consumers = [None] * n if make_in_threads else [make(i) for i in range(n)]
    barrier = threading.Barrier(n + 1)
    holding = [False] * n
    stop = threading.Event()
    errors = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            if make_in_threads:
                consumers[i] = make(i)
            c = consumers[i]
            subscribe(c, lambda held: holding.__setitem__(i, held))
            while not stop.is_set():
                drive(c)
        except Exception as e:           # noqa: BLE001 - reported below
            errors.append(repr(e))
            stop.set()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()            # before the barrier opens: a consumer may be done first
    barrier.wait()
    elapsed = None
    while not stop.is_set():
        if all(holding) and (formed is None or formed()):
            elapsed = time.perf_counter() - t0
            break
        if time.perf_counter() - t0 > timeout:
            errors.append(f"not all {n} consumers assigned after {timeout}s")
            break
        time.sleep(0.002)
    stop.set()
    for t in threads:
        t.join(30)
    close_all([c for c in consumers if c is not None], close)
    if errors:
        raise RuntimeError(errors[0])
    return elapsed


def close_all(clients: list, close) -> None:
    """``close(client)`` for every client at once (a consumer's close waits for its leave)."""
    closers = [threading.Thread(target=close, args=(c,), daemon=True) for c in clients]
    for t in closers:
        t.start()
    for t in closers:
        t.join(30)


def confluent_round(bootstrap: str, group: str, n: int) -> float:
    from confluent_kafka import Consumer

    def make(i):
        return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"ck-{i}",
                         "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "log_level": 3})

    def subscribe(c, holds):
        c.subscribe([TOPIC], on_assign=lambda _, parts: holds(bool(parts)),
                    on_revoke=lambda _, parts: holds(False))

    return _assign_time(n, make, subscribe, lambda c: c.poll(0.02), lambda c: c.close())


def kafka_python_round(bootstrap: str, group: str, n: int) -> float:
    """kafka-python 3.0.12 polls with 500 ms: with very short polls (20 ms) its join task can
    finish between two polls and the member then never completes the join (seen with any
    broker build here: the SyncGroup answer arrives, then nothing; the session expires)."""
    from kafka import ConsumerRebalanceListener, KafkaConsumer

    class Listener(ConsumerRebalanceListener):
        def __init__(self, holds):
            self.holds = holds

        def on_partitions_revoked(self, revoked):
            self.holds(False)

        def on_partitions_assigned(self, assigned):
            self.holds(bool(assigned))

    def make(i):
        return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=f"kp-{i}",
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS,
                             enable_auto_commit=False, auto_offset_reset="earliest")

    return _assign_time(n, make, lambda c, holds: c.subscribe([TOPIC], listener=Listener(holds)),
                        lambda c: c.poll(timeout_ms=500), lambda c: c.close())


# --- 2. requests per second ---------------------------------------------------------------

def loadgen_rate(port: int, api: str, conns: int, inflight: int, seconds: float, tag: str) -> dict:
    cmd = [PY, LOADGEN, "rate", "--port", str(port), "--api", api, "--conns", str(conns),
           "--inflight", str(inflight), "--seconds", str(seconds), "--warmup", str(min(0.5, seconds / 4)),
           "--topic", TOPIC, "--tag", tag]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120 + seconds)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def aimed_bar(api: str, conns: int, inflight: int) -> float:
    """The ratio to the mock aimed at per cell: Heartbeat serial on one connection as fast as
    the mock, other Heartbeat cells half; OffsetCommit serial half, its other cells a quarter."""
    if api == "heartbeat":
        return 1.0 if conns == 1 and inflight == 1 else 0.5
    return 0.5 if conns == 1 and inflight == 1 else 0.25


# --- 3. memory -----------------------------------------------------------------------------

def build_groups(broker: OurBroker, groups: int, members: int, lanes: int) -> dict:
    base_rss, base_hwm = broker.status("VmRSS"), broker.status("VmHWM")
    cmd = [PY, LOADGEN, "groups", "--port", str(broker.port), "--groups", str(groups),
           "--members", str(members), "--lanes", str(lanes), "--topic", TOPIC, "--tag", "mem", "--hold"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise RuntimeError("group builder failed")
    stats = json.loads(line)
    time.sleep(1.0)
    stats.update(rss_before_kb=base_rss, hwm_before_kb=base_hwm, rss_kb=broker.status("VmRSS"),
                 hwm_kb=broker.status("VmHWM"))
    proc.stdin.write("\n")
    proc.stdin.close()
    proc.wait(30)
    return stats


# --- output --------------------------------------------------------------------------------

def table(title: str, header: list[str], rows: list[list]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in cells[1:]:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short run: 1 repeat, 1 s cells, 1,000 groups")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: rebalance,rate,memory")
    ap.add_argument("--baseline", metavar="REV", help="also measure the request rates of the broker "
                    "of git revision REV (e.g. origin/main), in the same run")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for our broker only, e.g. log.flush.interval.messages=1")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    reps = 1 if args.quick else 3
    cell_s = 1.0 if args.quick else 3.0
    n_groups = 1_000 if args.quick else 10_000
    sizes = [1, 5, 20]
    out = []

    def emit(text: str = "") -> None:
        print(text, flush=True)
        out.append(text)

    workdir = tempfile.mkdtemp(prefix="groupbroker-e2e-")
    overrides = {"group.initial.rebalance.delay.ms": 0}
    ours = OurBroker(workdir, {**overrides, **dict(kv.split("=", 1) for kv in args.set)})
    mock = MockCluster(initial_delay_ms=0)
    base = None
    if args.baseline and "rate" not in skip:
        base = OurBroker(os.path.join(workdir, "baseline"), overrides,
                         repo=checkout(args.baseline, workdir))
        create_topic(base.bootstrap)
    emit(f"groupbroker e2e benchmark ({'quick' if args.quick else 'full'}) on {os.cpu_count()} cores")
    emit(f"ours: python -m broker serve ({ours.overrides})  (pid {ours.proc.pid}) at {ours.bootstrap}")
    emit(f"mock: librdkafka {__import__('confluent_kafka').libversion()[0]} mock cluster, 1 broker at "
         f"{mock.bootstrap}, in this process; initial rebalance delay {mock.delay_note}")
    emit(f"consumers: session.timeout.ms={SESSION_MS}, heartbeat.interval.ms={HEARTBEAT_MS}; "
         f"topic {TOPIC} with {PARTITIONS} partitions "
         f"(ours: AdminClient.create_topics; mock: rd_kafka_mock_topic_create, AdminClient hangs there)")
    create_topic(ours.bootstrap)
    mock.create_topic(TOPIC, PARTITIONS)
    summary = []
    try:
        # 1. rebalance
        if "rebalance" not in skip:
            rows = []
            for n in sizes:
                res = {}
                for label, fn, bootstrap in (("ck-ours", confluent_round, ours.bootstrap),
                                             ("ck-mock", confluent_round, mock.bootstrap),
                                             ("kp-ours", kafka_python_round, ours.bootstrap)):
                    times = []
                    for r in range(reps):
                        g = f"rb-{label}-{n}-{r}-{os.getpid()}"
                        log(f"rebalance {label} N={n} run {r + 1}/{reps}")
                        try:
                            times.append(fn(bootstrap, g, n))
                        except RuntimeError as e:      # a cell that never converged: report it
                            log(f"  {label} N={n}: {e}")
                            times.append(float("inf"))
                    res[label] = (statistics.median(times), times)
                ratio = res["ck-ours"][0] / res["ck-mock"][0]
                rows.append([n, f"{res['ck-ours'][0]:.3f}", f"{res['ck-mock'][0]:.3f}", f"{ratio:.2f}",
                             f"{res['kp-ours'][0]:.3f}",
                             " / ".join(f"{t:.2f}" for t in res["ck-ours"][1]),
                             " / ".join(f"{t:.2f}" for t in res["ck-mock"][1]),
                             " / ".join(f"{t:.2f}" for t in res["kp-ours"][1])])
                summary.append((f"rebalance N={n} (confluent)", ratio, ratio <= 1.0, "<= 1.00"))
            emit()
            emit(table(f"1. seconds from first subscribe until all N consumers hold an assignment "
                       f"(median of {reps}; lower is better; ratio = ours/mock)",
                       ["N", "ck ours", "ck mock", "ours/mock", "kafka-python ours",
                        "ck ours runs", "ck mock runs", "kp ours runs"], rows))

        # 2. requests per second
        if "rate" not in skip:
            rows = []
            for api in ("heartbeat", "commit"):
                for conns in (1, 16, 64):
                    for inflight in (1, 32):
                        r = {}
                        brokers = [("ours", ours.port), ("mock", mock.port)]
                        if base is not None:
                            brokers.append(("base", base.port))
                        for label, port in brokers:
                            log(f"rate {api} conns={conns} inflight={inflight} {label}")
                            r[label] = loadgen_rate(port, api, conns, inflight, cell_s,
                                                    f"{api[:2]}{conns}x{inflight}")
                        ratio = r["ours"]["rate"] / r["mock"]["rate"]
                        name = f"{'Heartbeat v4' if api == 'heartbeat' else 'OffsetCommit v8'}"
                        mode = "serial" if inflight == 1 else f"{inflight} in flight"
                        row = [name, conns, mode, f"{r['ours']['rate']:,.0f}", f"{r['mock']['rate']:,.0f}",
                               f"{ratio:.3f}"]
                        if base is not None:
                            gain = r["ours"]["rate"] / r["base"]["rate"]
                            row += [f"{r['base']['rate']:,.0f}", f"{gain:.2f}"]
                            summary.append((f"{name} {conns} conn {mode} (ours/{args.baseline})", gain,
                                            gain >= 1.5, ">= 1.50"))
                        rows.append(row + [f"{r['ours']['client_cpu']:.0%}", f"{r['mock']['client_cpu']:.0%}",
                                           "/".join(str(r[b]["errors"]) for b, _ in brokers)])
                        bar = aimed_bar(api, conns, inflight)
                        summary.append((f"{name} {conns} conn {mode}", ratio, ratio >= bar, f">= {bar:.2f}"))
            emit()
            emit(table(f"2. requests per second ({cell_s:g} s per cell after warm-up; higher is better; "
                       f"ratio = ours/mock; load generator in its own process; ours and mock at their "
                       f"default flush settings)",
                       ["request", "conns", "mode", "ours req/s", "mock req/s", "ours/mock"]
                       + ([f"{args.baseline} req/s", f"ours/{args.baseline}"] if base is not None else [])
                       + ["client cpu ours", "client cpu mock", "errors " + "/".join(b for b, _ in brokers)],
                       rows))

        # 3. memory
        if "memory" not in skip:
            log(f"memory: building {n_groups} groups of 5")
            m = build_groups(ours, n_groups, 5, 100)
            emit()
            emit(table(f"3. our broker's memory with {m['groups']:,} groups of 5 members "
                       f"({m['connections']} client connections, built in {m['seconds']:.1f} s, "
                       f"{m['requests']:,} requests, {m['slow_groups']} groups needed rejoins)",
                       ["measure", "MiB"],
                       [["VmRSS before building", f"{m['rss_before_kb'] / 1024:.1f}"],
                        ["VmRSS with the groups", f"{m['rss_kb'] / 1024:.1f}"],
                        ["VmHWM (peak RSS)", f"{m['hwm_kb'] / 1024:.1f}"],
                        ["growth per group (KiB)", f"{(m['rss_kb'] - m['rss_before_kb']) / max(m['groups'], 1):.2f}"]]))
    finally:
        if base is not None:
            base.stop()
        code = ours.stop()
        log(f"our broker stopped with exit code {code}; logs in {ours.log_path}")

    if summary:
        emit()
        emit("summary against the bars (ours at least matches the mock's rebalance time; the request "
             "rates aimed at against the mock, and the 1.5x required against the baseline)")
        for name, ratio, ok, bar in summary:
            emit(f"  {'PASS' if ok else 'FAIL'}  {name:<58} {ratio:8.3f}  (bar {bar})")
        passed = sum(ok for *_, ok, _ in summary)
        emit(f"  {passed}/{len(summary)} cells meet the bar")
    return 0


if __name__ == "__main__":
    sys.exit(main())
