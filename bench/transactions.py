"""Transactions per second: a producer committing 10-record transactions across 3 partitions,
each with consumer offsets (send_offsets_to_transaction), on our broker and on librdkafka's
mock cluster, in one run.

    python bench/transactions.py [--seconds S] [--flush-each]

Each transaction is what an exactly-once stream processor commits per batch: begin, 10 records
spread over 3 partitions, the batch's input offsets for a group, commit (AddPartitionsToTxn,
Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn and the markers). Ours runs as
``groupbroker serve`` (a process of its own, like the mock's threads in the client process);
``--flush-each`` adds a run of ours with log.flush.interval.messages=1 (fsync before answers).
The goal: at least the mock's rate.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import MockCluster, OurBroker, table  # noqa: E402

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--flush-each", action="store_true")
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
    print(table(f"10-record transactions over {PARTITIONS} partitions, with offsets, "
                f"{args.seconds:.0f} s each", ["broker", "txn/s", "transactions", "vs mock"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
