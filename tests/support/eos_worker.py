"""A consume-transform-produce member with exactly-once semantics (confluent-kafka), run as its
own process so a test can SIGKILL it mid-transaction.

``python -m tests.support.eos_worker BOOTSTRAP GROUP INPUT OUTPUT NAME`` reads INPUT with
``isolation.level=read_committed`` in GROUP, and for each batch: begins a transaction, writes
each record to OUTPUT as ``<input partition>:<input offset>:<value>``, adds its consumer's
positions with ``send_offsets_to_transaction`` and commits. It prints one JSON line per event
(``in-transaction`` once a batch is produced and not yet committed, ``committed``, ``error``);
with ``--linger-in-txn S`` it waits S seconds inside every transaction, which is where a test
kills it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer


def emit(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser()
    for name in ("bootstrap", "group", "input", "output", "name"):
        ap.add_argument(name)
    ap.add_argument("--linger-in-txn", type=float, default=0.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "client.id": args.name, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                         "fetch.wait.max.ms": 100, "partition.assignment.strategy": "range"})
    producer = Producer({"bootstrap.servers": args.bootstrap, "transactional.id": f"eos-{args.name}",
                         "transaction.timeout.ms": 10000, "linger.ms": 5})
    producer.init_transactions(30)
    consumer.subscribe([args.input])
    emit(event="ready", name=args.name)
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        batch = consumer.consume(100, 0.2)
        batch = [m for m in batch if m.error() is None]
        if not batch:
            continue
        producer.begin_transaction()
        for m in batch:
            producer.produce(args.output, key=m.key(),
                             value=f"{m.partition()}:{m.offset()}:{m.value().decode()}".encode())
        producer.flush(30)
        emit(event="in-transaction", name=args.name, records=len(batch))
        if args.linger_in_txn:
            time.sleep(args.linger_in_txn)
        try:
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                 consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            emit(event="committed", name=args.name, records=len(batch))
        except KafkaException as e:
            error = e.args[0]
            emit(event="error", name=args.name, error=error.name(), retriable=error.retriable(),
                 abortable=error.txn_requires_abort(), fatal=error.fatal())
            if error.fatal():
                return 3
            producer.abort_transaction(30)
            # rewind to the committed offsets, as an EOS application does after an abort
            for tp in consumer.committed(consumer.assignment(), 10):
                if tp.offset < 0:
                    tp.offset = OFFSET_BEGINNING
                consumer.seek(tp)
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
