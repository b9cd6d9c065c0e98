"""Time until N consumers hold an assignment: the KIP-848 consumer protocol against the
librdkafka mock cluster, and against the classic protocol on our broker, in one run.

For N = 1, 5, 20 confluent-kafka consumers started together (``group.protocol=consumer``),
the clock runs from their subscribe until every one holds partitions (their rebalance
callbacks say so), on our broker and on librdkafka's mock cluster, both with the same
consumer heartbeat interval (``group.consumer.heartbeat.interval.ms`` on ours,
``rd_kafka_mock_set_group_consumer_heartbeat_interval_ms`` on the mock). The classic
protocol on ours (same consumers with ``group.protocol=classic`` and the same heartbeat
interval, no initial rebalance delay) is the third column. Ratios are ours/mock and
consumer/classic, measured in the same run.

Run: ``.venv/bin/python bench/consumer_protocol.py [--reps 3] [--heartbeat-ms 3000]``.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import (PARTITIONS, SESSION_MS, TOPIC, MockCluster, OurBroker, _assign_time,  # noqa: E402
                 create_topic, log, table)


def consumer_round(bootstrap: str, group: str, n: int, protocol: str, heartbeat_ms: int) -> float:
    from confluent_kafka import Consumer

    def make(i):
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": f"ck-{i}",
                "group.protocol": protocol, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "log_level": 3}
        if protocol == "classic":     # the consumer protocol takes both from the broker
            conf.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": heartbeat_ms})
        return Consumer(conf)

    def subscribe(c, holds):
        held: set[int] = set()      # the consumer protocol's callbacks are incremental

        def assigned(_, parts):
            held.update(p.partition for p in parts)
            holds(bool(held))

        def revoked(_, parts):
            held.difference_update(p.partition for p in parts)
            holds(bool(held))
        c.subscribe([TOPIC], on_assign=assigned, on_revoke=revoked, on_lost=revoked)

    return _assign_time(n, make, subscribe, lambda c: c.poll(0.02), lambda c: c.close())


def set_mock_heartbeat(mock: MockCluster, heartbeat_ms: int) -> None:
    """The mock has no property for it: call its C API, as bench/e2e.py does for the delay."""
    lib = mock._lib
    lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mock._mc, heartbeat_ms)
    lib.rd_kafka_mock_set_group_consumer_session_timeout_ms.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(mock._mc, SESSION_MS)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--heartbeat-ms", type=int, default=3_000,
                    help="the consumer heartbeat interval on both brokers (librdkafka's default is 3000)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="another setting for our broker (e.g. groupbroker.offsets.fsync=false)")
    args = ap.parse_args()
    hb = args.heartbeat_ms
    workdir = tempfile.mkdtemp(prefix="groupbroker-cgh-")
    ours = OurBroker(workdir, {"group.initial.rebalance.delay.ms": 0,
                               "group.consumer.heartbeat.interval.ms": hb,
                               "group.consumer.min.heartbeat.interval.ms": min(hb, 5_000),
                               "group.consumer.session.timeout.ms": SESSION_MS,
                               "group.consumer.min.session.timeout.ms": min(SESSION_MS, 45_000),
                               **dict(kv.split("=", 1) for kv in args.set)})
    mock = MockCluster(initial_delay_ms=0)
    set_mock_heartbeat(mock, hb)
    print(f"consumer protocol benchmark on {os.cpu_count()} cores (ours: {ours.overrides}); confluent-kafka "
          f"{__import__('confluent_kafka').version()[0]} (librdkafka "
          f"{__import__('confluent_kafka').libversion()[0]}); heartbeat interval {hb} ms on both "
          f"brokers, session {SESSION_MS} ms; topic {TOPIC} with {PARTITIONS} partitions", flush=True)
    create_topic(ours.bootstrap)
    mock.create_topic(TOPIC, PARTITIONS)
    rows = []
    try:
        for n in (1, 5, 20):
            cells = {}
            for label, bootstrap, protocol in (("ours", ours.bootstrap, "consumer"),
                                               ("mock", mock.bootstrap, "consumer"),
                                               ("classic", ours.bootstrap, "classic")):
                times = []
                for r in range(args.reps):
                    log(f"{label} N={n} run {r + 1}/{args.reps}")
                    try:
                        times.append(consumer_round(bootstrap, f"cgh-{label}-{n}-{r}-{os.getpid()}",
                                                    n, protocol, hb))
                    except RuntimeError as e:
                        log(f"  {label} N={n}: {e}")
                        times.append(float("inf"))
                cells[label] = (statistics.median(times), times)
            ours_s, mock_s, classic_s = (cells[k][0] for k in ("ours", "mock", "classic"))
            rows.append([n, f"{ours_s:.3f}", f"{mock_s:.3f}", f"{ours_s / mock_s:.2f}",
                         f"{classic_s:.3f}", f"{ours_s / classic_s:.2f}",
                         " / ".join(f"{t:.2f}" for t in cells["ours"][1]),
                         " / ".join(f"{t:.2f}" for t in cells["mock"][1]),
                         " / ".join(f"{t:.2f}" for t in cells["classic"][1])])
    finally:
        ours.stop()
    print(table(f"seconds from subscribe until all N consumers hold an assignment (median of "
                f"{args.reps}; lower is better)",
                ["N", "consumer ours", "consumer mock", "ours/mock", "classic ours",
                 "consumer/classic", "ours runs", "mock runs", "classic runs"], rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
