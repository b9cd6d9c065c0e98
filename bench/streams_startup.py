"""Kafka Streams: how long until a three-instance application runs, groupbroker against Apache
Kafka 4.3.1, in one run.

On each broker, R times: a fresh word-count application (a stateless subtopology that
repartitions by word, a stateful one that counts: 8 tasks over a 4-partition input) starts three
KafkaStreams instances at once in one JVM (``StreamsScenarios startup``, the same program the
tests run); the figure is the milliseconds from the first start until all three are RUNNING
with every task placed, each instance holding some. With ``group.protocol=streams`` (KIP-1071)
the broker assigns the tasks; with ``classic`` Streams' own assignor in the group leader does.
Kafka runs from its Maven artefacts (apache_kafka, as the tests' oracle) with the same settings
(the tests' defaults, no initial rebalance delay). The ratio is groupbroker/Kafka (below 1 is
faster).

Run: ``.venv/bin/python bench/streams_startup.py [--rounds 3] [--protocols streams,classic]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from e2e import OurBroker, log, table  # noqa: E402

from apache_kafka.process import KafkaProcess  # noqa: E402
from broker.testing.launcher import TEST_DEFAULTS  # noqa: E402
from tests.interop.java_driver import all_jars, compiled  # noqa: E402
from tests.interop.test_kafka_streams import SOURCE, run_jvm  # noqa: E402

SETTINGS = {**TEST_DEFAULTS, "group.initial.rebalance.delay.ms": "0", "group.streams.initial.rebalance.delay.ms": "0"}


def running_ms(classpath: str, bootstrap: str, protocol: str, work: Path) -> int:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    doc = run_jvm(classpath, bootstrap, "startup", prefix, work / prefix, protocol=protocol, timeout=120)
    return doc["running_ms"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--protocols", default="streams,classic")
    args = ap.parse_args()
    protocols = args.protocols.split(",")
    classpath = compiled(SOURCE, "StreamsScenarios", all_jars())
    work = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    ours = OurBroker(str(work / "ours"), SETTINGS)
    kafka = KafkaProcess(work / "kafka", SETTINGS).start()
    figures: dict[tuple[str, str], list[int]] = {}
    try:
        for protocol in protocols:
            for name, bootstrap in (("groupbroker", ours.bootstrap), ("Kafka 4.3.1", kafka.bootstrap_servers)):
                for r in range(args.rounds):
                    ms = running_ms(classpath, bootstrap, protocol, work)
                    log(f"{name}, group.protocol={protocol}, round {r + 1}: {ms} ms")
                    figures.setdefault((protocol, name), []).append(ms)
    finally:
        ours.stop()
        kafka.stop()
    rows = []
    for protocol in protocols:
        mine, theirs = (statistics.median(figures[(protocol, n)]) for n in ("groupbroker", "Kafka 4.3.1"))
        rows.append([f"group.protocol={protocol}: start to RUNNING, median (ms)", f"{mine:,.0f}", f"{theirs:,.0f}",
                     f"{mine / theirs:.2f}"])
    print(table(f"Kafka Streams 4.3.1: three instances started at once, 8 tasks, {args.rounds} rounds each",
                ["", "groupbroker", "Kafka 4.3.1", "ratio"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
