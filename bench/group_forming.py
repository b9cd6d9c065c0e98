"""Groups that form at once: N consumers of one group started together, with the pytest
fixture's broker settings (``TEST_DEFAULTS`` of broker/testing/launcher.py).

For N = 1, 5, 20 kafka-python and confluent-kafka consumers (classic protocol, the clients'
own defaults otherwise) of one group on a 60-partition topic, each in its own thread, the
clock runs from the start — before the consumers are even created, so their construction and
bootstrap count — until every consumer holds a non-empty assignment and the assignments are
those of one generation (disjoint, covering every partition; their rebalance callbacks
report them). The generation the group reached by then is read from the broker's log (one
``join phase completed`` line per generation). 3 runs per cell; a cell passes when its median
is within the bar of 0.5 s (the runs over it are counted).

Why the delay matters (see TEST_DEFAULTS' comment): with group.initial.rebalance.delay.ms=0
the first member completes a join phase alone and the others force further generations,
which the clients learn of late (librdkafka joins at most once a second after a failed
SyncGroup; a member that already synced learns at its next heartbeat, 3 s by default).

``--delay-ms D`` (repeatable) overrides ``group.initial.rebalance.delay.ms`` to compare
candidate defaults in one run; ``--broker embedded`` runs the broker in this process as the
``groupbroker`` pytest fixture does (the default is a ``groupbroker serve`` subprocess, so the
broker does not share this process's GIL with the consumers); ``--ck``/``--kp KEY=VALUE`` set
a client property (e.g. ``--kp heartbeat_interval_ms=100``).

Run: ``.venv/bin/python bench/group_forming.py [--reps 3] [--delay-ms 0 --delay-ms 100]``.
Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import (REPO, PARTITIONS, TOPIC, OurBroker, _assign_time, checkout, create_topic,  # noqa: E402
                 log, table)

sys.path.insert(0, str(REPO))
from broker.testing.launcher import TEST_DEFAULTS  # noqa: E402

BAR_S = 0.5
DELAY = "group.initial.rebalance.delay.ms"
#: one line per completed join phase (coordinator/classic/manager.py's transition log)
JOINED = re.compile(r"group (\S+): PreparingRebalance -> CompletingRebalance \(generation (\d+)")


# --- the broker ----------------------------------------------------------------------------

class _Lines(logging.Handler):
    """The coordinator's log lines of the embedded broker, kept in memory."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class Broker:
    """Our broker with the fixture's defaults plus ``overrides``: a subprocess (the launcher's
    BrokerProcess) or embedded in this process (the pytest fixture's EmbeddedBroker)."""

    def __init__(self, kind: str, overrides: dict, repo: Path = REPO):
        self.kind = kind
        self.workdir = tempfile.mkdtemp(prefix="groupbroker-forming-")
        if kind == "process":
            self.proc = OurBroker(self.workdir, {**TEST_DEFAULTS, **overrides}, repo=repo)
            self.bootstrap = self.proc.bootstrap
            self.settings = self.proc.overrides
        else:
            from broker.testing.embedded import EmbeddedBroker
            self.lines = _Lines()
            coordinator_log = logging.getLogger("groupbroker.coordinator")
            coordinator_log.addHandler(self.lines)
            coordinator_log.setLevel(logging.INFO)
            self.embedded = EmbeddedBroker(os.path.join(self.workdir, "data"), overrides).start()
            self.bootstrap = self.embedded.bootstrap_servers
            self.settings = self.embedded.props

    def log_text(self) -> str:
        return self.proc.log_text() if self.kind == "process" else "\n".join(self.lines.lines)

    def generations(self, group: str) -> list[int]:
        """The generations the group's join phases completed, in order, as logged so far."""
        return [int(m.group(2)) for m in JOINED.finditer(self.log_text()) if m.group(1) == group]

    def stop(self) -> None:
        if self.kind == "process":
            code = self.proc.stop()
            log(f"broker stopped with exit code {code}; log in {self.proc.log_path}")
        else:
            self.embedded.stop()
            logging.getLogger("groupbroker.coordinator").removeHandler(self.lines)


# --- one round -----------------------------------------------------------------------------

class Holdings:
    """What each consumer holds, as its rebalance callbacks said (incremental, so eager and
    cooperative assignors alike); ``formed()`` once they are one generation's assignment."""

    def __init__(self, n: int):
        self.held = [set() for _ in range(n)]
        self.lock = threading.Lock()

    def change(self, i: int, holds, added=(), removed=()) -> None:
        with self.lock:
            self.held[i].update(added)
            self.held[i].difference_update(removed)
            holds(bool(self.held[i]))

    def formed(self) -> bool:
        with self.lock:
            if not all(self.held):
                return False
            total = sum(len(h) for h in self.held)
            return total == PARTITIONS and len(set().union(*self.held)) == PARTITIONS


def round_time(broker: Broker, client: str, group: str, n: int, props: dict,
               kp_poll_ms: int, from_start: bool = True) -> tuple[float, float, list[int]]:
    """Seconds until formed, seconds until the last consumer subscribed (after its creation),
    and the generations completed by then."""
    holdings = Holdings(n)
    seen: list[list[int]] = []
    seen_lock = threading.Lock()

    def close_after_snapshot(close):
        def run(c):
            with seen_lock:          # the first close: the group is formed, nobody left yet
                if not seen:
                    seen.append(broker.generations(group))
            close(c)
        return run

    if client == "confluent":
        from confluent_kafka import Consumer

        def make(i):
            return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                             "client.id": f"ck-{i}", "group.protocol": "classic",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "log_level": 3, **props})

        def subscribe_i(i):
            def sub(c, holds):
                c.subscribe([TOPIC],
                            on_assign=lambda _, ps: holdings.change(i, holds, added=[p.partition for p in ps]),
                            on_revoke=lambda _, ps: holdings.change(i, holds, removed=[p.partition for p in ps]),
                            on_lost=lambda _, ps: holdings.change(i, holds, removed=[p.partition for p in ps]))
            return sub
        drive, close = (lambda c: c.poll(0.02)), (lambda c: c.close())
    else:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        class Listener(ConsumerRebalanceListener):
            def __init__(self, i, holds):
                self.i, self.holds = i, holds

            def on_partitions_revoked(self, revoked):
                holdings.change(self.i, self.holds, removed=[tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned):
                holdings.change(self.i, self.holds, added=[tp.partition for tp in assigned])

        def make(i):
            return KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group, client_id=f"kp-{i}",
                                 enable_auto_commit=False, auto_offset_reset="earliest", **props)

        def subscribe_i(i):
            return lambda c, holds: c.subscribe([TOPIC], listener=Listener(i, holds))
        drive, close = (lambda c: c.poll(timeout_ms=kp_poll_ms)), (lambda c: c.close())

    # _assign_time hands subscribe the consumer only: find its index by identity
    made: dict[int, int] = {}
    began, subscribed = [], []

    def make_tracked(i):
        began.append(time.perf_counter())
        c = make(i)
        made[id(c)] = i
        return c

    def subscribe_any(c, holds):
        subscribed.append(time.perf_counter())
        subscribe_i(made[id(c)])(c, holds)

    elapsed = _assign_time(n, make_tracked, subscribe_any, drive, close_after_snapshot(close),
                           formed=holdings.formed, make_in_threads=from_start)
    first = min(began) if from_start else min(subscribed)
    return elapsed, max(subscribed) - first, (seen[0] if seen else broker.generations(group))


# --- main ----------------------------------------------------------------------------------

def parse_props(pairs: list[str]) -> dict:
    out = {}
    for kv in pairs:
        key, value = kv.split("=", 1)
        out[key] = int(value) if value.lstrip("-").isdigit() else value
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="1,5,20")
    ap.add_argument("--clients", default="kafka-python,confluent")
    ap.add_argument("--delay-ms", type=int, action="append", default=[],
                    help=f"{DELAY} for the broker (repeatable; default: the fixture's, "
                         f"{TEST_DEFAULTS[DELAY]})")
    ap.add_argument("--broker", choices=("process", "embedded"), default="process")
    ap.add_argument("--broker-rev", metavar="REV",
                    help="run the broker of git revision REV (unpacked from this repository) "
                         "instead of the working tree's; the settings stay this tree's TEST_DEFAULTS")
    ap.add_argument("--ck", action="append", default=[], metavar="KEY=VALUE",
                    help="a confluent-kafka consumer property")
    ap.add_argument("--kp", action="append", default=[], metavar="KEY=VALUE",
                    help="a kafka-python KafkaConsumer argument (ints as ints)")
    ap.add_argument("--from", dest="start", choices=("start", "subscribe"), default="start",
                    help="start the clock before the consumers are created (default), or once "
                         "they all exist, at their subscribe (as bench/e2e.py does)")
    ap.add_argument("--kp-poll-ms", type=int, default=500,
                    help="kafka-python's poll timeout in the consumer threads (see bench/e2e.py)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    assert max(sizes) <= PARTITIONS
    clients = args.clients.split(",")
    props = {"confluent": parse_props(args.ck), "kafka-python": parse_props(args.kp)}
    delays = args.delay_ms or [None]
    repo = REPO
    if args.broker_rev:
        assert args.broker == "process", "--broker-rev runs a subprocess broker"
        repo = checkout(args.broker_rev, tempfile.mkdtemp(prefix="groupbroker-forming-rev-"))
    import confluent_kafka
    import kafka
    print(f"group forming on {os.cpu_count()} cores: kafka-python {kafka.__version__} "
          f"{props['kafka-python'] or ''}, confluent-kafka {confluent_kafka.__version__} (librdkafka "
          f"{confluent_kafka.libversion()[0]}) {props['confluent'] or ''}; classic protocol, topic "
          f"{TOPIC} with {PARTITIONS} partitions; broker: {args.broker}"
          f"{f' (revision {args.broker_rev})' if args.broker_rev else ''}", flush=True)
    verdicts = []
    for delay in delays:
        overrides = {} if delay is None else {DELAY: delay}
        broker = Broker(args.broker, overrides, repo)
        delay_ms = broker.settings[DELAY]
        print(f"\nbroker settings: {broker.settings}", flush=True)
        rows = []
        try:
            create_topic(broker.bootstrap)
            for client in clients:
                for n in sizes:
                    times, ready, gens = [], [], []
                    for r in range(args.reps):
                        group = f"form-{client}-{n}-{delay_ms}-{r}-{os.getpid()}"
                        log(f"delay {delay_ms} ms, {client} N={n} run {r + 1}/{args.reps}")
                        try:
                            t, made, g = round_time(broker, client, group, n, props[client],
                                                    args.kp_poll_ms, args.start == "start")
                        except RuntimeError as e:          # never formed: report it
                            log(f"  {client} N={n}: {e}")
                            t, made, g = float("inf"), float("nan"), broker.generations(group)
                        times.append(t)
                        ready.append(made)
                        gens.append(g[-1] if g else 0)
                    median = statistics.median(times)
                    over = sum(t > BAR_S for t in times)
                    verdicts.append((delay_ms, client, n, median <= BAR_S, over, len(times)))
                    rows.append([client, n, f"{median:.3f}", " / ".join(f"{t:.3f}" for t in times),
                                 " / ".join(f"{t:.3f}" for t in ready),
                                 " / ".join(map(str, gens)),
                                 ("yes" if median <= BAR_S else "NO") + (f" ({over} run(s) over)" if over else "")])
        finally:
            broker.stop()
        since = ("start (before the consumers are created)" if args.start == "start"
                 else "subscribe (the consumers created before)")
        print(table(f"{DELAY}={delay_ms}: seconds from {since} "
                    f"until all N hold one generation's assignment (median of {args.reps})",
                    ["client", "N", "median s", "runs s", "last subscribe at s", "generation reached",
                     f"median <= {BAR_S} s"],
                    rows), flush=True)
    print()
    for delay_ms, client, n, ok, over, runs in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {DELAY}={delay_ms}  {client:<13} N={n:<3} "
              f"({over}/{runs} runs over {BAR_S} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
