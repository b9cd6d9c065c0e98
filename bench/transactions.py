"""Transactions per second: a producer committing 10-record transactions across 3 partitions,
each with consumer offsets, in both transaction versions, on groupbroker, on Apache Kafka 4.3.1
and on librdkafka's mock cluster, in one run.

    python bench/transactions.py [--seconds S] [--flush-each] [--no-java]

Each transaction is what an exactly-once stream processor commits per batch: begin, 10 records
spread over 3 partitions, the batch's input offsets for a group, commit. In transaction version 1
that is AddPartitionsToTxn, Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and the markers;
in version 2 (Kafka 4's default, KIP-890) the Produce and the TxnOffsetCommit add their
partitions themselves, and EndTxn bumps the epoch. Two producers run it: librdkafka
(confluent-kafka, version 1 only) against ours and against its mock, the ratio against the mock;
and Kafka's Java producer (kafka-clients 4.3.1, tests/interop/clients/java/src/TxnBench.java),
which uses version 2 where it is finalized, against ours and against Kafka, each finalizing
transaction.version 2 and then 1 (groupbroker.feature.transaction.version; Kafka formatted so),
the ratio against Kafka at the same version. Ours runs as ``groupbroker serve``; ``--flush-each``
adds a run of ours with log.flush.interval.messages=1 (fsync before answers).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from e2e import MockCluster, OurBroker, table  # noqa: E402

from apache_kafka.process import KafkaProcess  # noqa: E402
from broker.testing.launcher import TEST_DEFAULTS  # noqa: E402
from tests.interop.java_driver import compiled, run as run_java  # noqa: E402

TOPIC, PARTITIONS, RECORDS_PER_TXN = "txn-bench", 3, 10


def transactions_per_second(bootstrap: str, seconds: float) -> tuple[float, int]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{time.time()}",
                         "linger.ms": 0, "log_level": 3})
    producer.init_transactions(30)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-bench-group",
                         "log_level": 3}).consumer_group_metadata()
    done, offset = 0, 0
    deadline = start = time.perf_counter()
    deadline += seconds
    while time.perf_counter() < deadline:
        producer.begin_transaction()
        for i in range(RECORDS_PER_TXN):
            producer.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
        offset += RECORDS_PER_TXN
        producer.send_offsets_to_transaction(
            [TopicPartition("txn-bench-in", p, offset) for p in range(PARTITIONS)], metadata, 30)
        producer.commit_transaction(30)
        done += 1
    return done / (time.perf_counter() - start), done


def run_ours(seconds: float, overrides: dict) -> tuple[float, int]:
    from confluent_kafka.admin import AdminClient, NewTopic
    broker = OurBroker(tempfile.mkdtemp(prefix="groupbroker-txn-bench-"), overrides)
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for name in (TOPIC, "txn-bench-in"):
            for future in admin.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
                future.result(15)
        return transactions_per_second(broker.bootstrap, seconds)
    finally:
        broker.stop()


def run_mock(seconds: float) -> tuple[float, int]:
    mock = MockCluster()
    try:
        mock.create_topic(TOPIC, PARTITIONS)
        mock.create_topic("txn-bench-in", PARTITIONS)
        return transactions_per_second(mock.bootstrap, seconds)
    finally:
        mock.close()


def java_rows(seconds: float) -> list[list[str]]:
    """The Java producer on each broker at transaction.version 2 then 1; ratio ours/Kafka."""
    classpath = compiled()
    work = Path(tempfile.mkdtemp(prefix="bench-txn-java-"))
    rows = []
    for level in (2, 1):
        ours = OurBroker(str(work / f"ours-{level}"), {**TEST_DEFAULTS, "groupbroker.feature.transaction.version": level})
        kafka = KafkaProcess(work / f"kafka-{level}", TEST_DEFAULTS, features={"transaction.version": level}).start()
        try:
            rates = {}
            for name, bootstrap in (("groupbroker", ours.bootstrap), ("Kafka 4.3.1", kafka.bootstrap_servers)):
                doc = run_java(classpath, bootstrap, "txn-bench", str(seconds), prefix=f"txn-bench-{level}",
                               log=work / f"{name.split()[0]}-{level}.log", timeout=seconds + 120)
                rates[name] = (doc["per_second"], doc["transactions"])
            for name, (rate, n) in rates.items():
                rows.append([f"Java producer, TV{level}, {name}", f"{rate:.0f}", str(n),
                             f"{rate / rates['Kafka 4.3.1'][0]:.2f} vs Kafka"])
        finally:
            kafka.stop()
            ours.stop()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--flush-each", action="store_true")
    ap.add_argument("--no-java", action="store_true", help="leave out the Java producer's rows (and Kafka)")
    args = ap.parse_args()
    rows = []
    mock_rate, mock_n = run_mock(args.seconds)
    rows.append(["librdkafka mock", f"{mock_rate:.0f}", str(mock_n), "1.00"])
    cases = {"ours": {}}
    if args.flush_each:
        cases["ours, log.flush.interval.messages=1"] = {"log.flush.interval.messages": 1}
    for name, overrides in cases.items():
        rate, n = run_ours(args.seconds, overrides)
        rows.append([name, f"{rate:.0f}", str(n), f"{rate / mock_rate:.2f}"])
    rows = [[f"librdkafka, TV1, {r[0]}", r[1], r[2], f"{r[3]} vs mock"] for r in rows]
    if not args.no_java:
        rows += java_rows(args.seconds)
    print(table(f"10-record transactions over {PARTITIONS} partitions, with offsets, "
                f"{args.seconds:.0f} s each", ["producer, transaction version, broker", "txn/s", "transactions",
                                               "ratio"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
