"""The wall time of a typical integration test, on our broker and on librdkafka's mock cluster.

One run is what a user's test does, start to end: start a broker, create a 6-partition
topic, produce 1,000 records, have three consumers of one group consume them all and commit,
close everything (the broker too). The client code is confluent-kafka's and the same on both
brokers; only the bootstrap and the way the broker is started and the topic created differ:

* ours: what the ``groupbroker`` pytest fixture does — an EmbeddedBroker (in this process,
  on a temporary data dir, with the fixture's TEST_DEFAULTS) with request recording on, the
  topic made with AdminClient.create_topics;
* mock: librdkafka's mock cluster as confluent-kafka users get it, a client created with
  ``test.mock.num.brokers=1`` (bench/e2e.py's MockCluster), the topic made with the mock's
  C API (AdminClient hangs there), with its defaults: its initial rebalance delay of 3000 ms
  is not settable through any property. (``--mock-delay-ms D`` adds a run with that delay set
  through the C API; with 0 it is no faster: the first consumer forms a generation alone and
  the mock then holds the next join phase for the session timeout less 1 s, 44 s with
  librdkafka's default session.timeout.ms.)

The consumers use librdkafka's defaults (classic protocol, range/roundrobin assignors), each
polls in its own thread; once the 1,000 records are consumed each commits synchronously, and
the committed offsets are checked to cover every record. One untimed warm-up run of each
first (imports, codecs), then ``--reps`` runs interleaved; it prints every run, the medians
and the ratios.

Run: ``.venv/bin/python bench/typical_test.py [--reps 5]`` (about 30 s).
Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import REPO, MockCluster, close_all, table  # noqa: E402

sys.path.insert(0, str(REPO))
from broker.testing.embedded import EmbeddedBroker  # noqa: E402

TOPIC, PARTITIONS, RECORDS, CONSUMERS = "typical", 6, 1_000, 3


# --- the test body, the same on both brokers -------------------------------------------------

def produce(bootstrap: str) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0, "records undelivered after 30 s"


def consume_and_commit(bootstrap: str, group: str) -> None:
    """Three consumers of ``group`` consume every record, then each commits; checks that the
    committed offsets cover every record."""
    from confluent_kafka import Consumer, KafkaError, KafkaException
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "client.id": f"typical-{i}", "auto.offset.reset": "earliest",
                           "enable.auto.commit": False}) for i in range(CONSUMERS)]
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    done = threading.Event()
    errors: list[str] = []

    def run(c) -> None:
        try:
            c.subscribe([TOPIC])
            while not done.is_set():
                msg = c.poll(0.05)
                if msg is None:
                    continue
                if msg.error():
                    raise KafkaException(msg.error())
                with lock:
                    seen.add((msg.partition(), msg.offset()))
                    if len(seen) == RECORDS:
                        done.set()
        except Exception as e:          # noqa: BLE001 - reported below
            errors.append(repr(e))
            done.set()

    threads = [threading.Thread(target=run, args=(c,), daemon=True) for c in consumers]
    for t in threads:
        t.start()
    if not done.wait(60):
        errors.append(f"only {len(seen)} of {RECORDS} records consumed in 60 s")
    done.set()
    for t in threads:
        t.join(10)
    committed: dict[int, int] = {}
    for c in consumers:
        try:
            for tp in c.commit(asynchronous=False) or ():
                committed[tp.partition] = max(committed.get(tp.partition, 0), tp.offset)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:     # it consumed nothing
                errors.append(f"commit: {e}")
    close_all(consumers, lambda c: c.close())
    if errors:
        raise RuntimeError(errors[0])
    if sum(committed.values()) != RECORDS:
        raise RuntimeError(f"committed offsets {committed} do not cover the {RECORDS} records")


def create_topic(bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        future.result(15)


# --- one run on each broker --------------------------------------------------------------------

def run_ours(group: str) -> float:
    """The test body runs in functions of its own, so its clients are gone (their connections
    closed) before the teardown stops the broker, as in a test function that returned: a
    connection still open would hold our graceful stop for its shutdown grace (3 s)."""
    t0 = time.perf_counter()
    data_dir = tempfile.mkdtemp(prefix="groupbroker-typical-")
    broker = EmbeddedBroker(data_dir).start()          # what the groupbroker fixture does
    broker.faults.record()
    try:
        create_topic(broker.bootstrap_servers)
        produce(broker.bootstrap_servers)
        consume_and_commit(broker.bootstrap_servers, group)
    finally:
        broker.stop()
    elapsed = time.perf_counter() - t0
    shutil.rmtree(data_dir, ignore_errors=True)       # the fixture's tmp dirs outlive the test
    return elapsed


def run_mock(group: str, initial_delay_ms: int | None) -> float:
    t0 = time.perf_counter()
    mock = MockCluster(initial_delay_ms)
    try:
        mock.create_topic(TOPIC, PARTITIONS)
        produce(mock.bootstrap)
        consume_and_commit(mock.bootstrap, group)
    finally:
        mock.close()
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mock-delay-ms", type=int, metavar="D",
                    help="also run the mock with its initial rebalance delay set to D ms")
    args = ap.parse_args()
    import confluent_kafka
    from broker.testing.launcher import TEST_DEFAULTS
    print(f"typical test on {os.cpu_count()} cores: confluent-kafka {confluent_kafka.__version__} "
          f"(librdkafka {confluent_kafka.libversion()[0]}); {RECORDS} records, topic of {PARTITIONS} "
          f"partitions, {CONSUMERS} consumers of one group; ours: EmbeddedBroker with TEST_DEFAULTS "
          f"(group.initial.rebalance.delay.ms={TEST_DEFAULTS['group.initial.rebalance.delay.ms']})",
          flush=True)
    cases = {"ours (fixture)": run_ours, "mock (defaults)": lambda g: run_mock(g, None)}
    if args.mock_delay_ms is not None:
        cases[f"mock (delay {args.mock_delay_ms})"] = lambda g: run_mock(g, args.mock_delay_ms)
    warm = {name: case(f"warm-{os.getpid()}") for name, case in cases.items()}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.reps):
        for name, case in cases.items():
            times[name].append(case(f"typical-{r}-{os.getpid()}"))
        print(f"run {r + 1}: " + ", ".join(f"{n} {t[-1]:.3f} s" for n, t in times.items()), flush=True)
    ours = statistics.median(times["ours (fixture)"])
    rows = [[name, f"{statistics.median(t):.3f}", " / ".join(f"{x:.3f}" for x in t),
             f"{warm[name]:.3f}", f"{statistics.median(t) / ours:.2f}"]
            for name, t in times.items()]
    print(table(f"seconds per typical test, start to end (median of {args.reps}; lower is better)",
                ["broker", "median s", "runs s", "warm-up run s", "x ours"], rows), flush=True)
    fastest = min(times, key=lambda n: statistics.median(times[n]))
    print(f"fastest: {fastest}; " + ", ".join(
        f"ours/{name} = {ours / statistics.median(t):.2f}" for name, t in times.items()
        if name != "ours (fixture)"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
