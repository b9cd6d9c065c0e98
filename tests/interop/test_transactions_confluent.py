"""Transactions with confluent-kafka 2.16 (librdkafka) against ``groupbroker serve``.

* commits and aborts as read_committed and read_uncommitted consumers see them;
* a zombie producer fenced by its new incarnation (the PRODUCER_FENCED recipe);
* exactly-once consume-transform-produce: three transactional members over a 6-partition input,
  one SIGKILLed inside a transaction and a fourth joining; a read_committed reader of the
  output sees every input record transformed exactly once and nothing aborted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.support.processes import import_client, wait_until

ck = import_client("confluent_kafka")
from tests.support.confluent import create_topics, produce  # noqa: E402

Consumer, Producer, KafkaException, TopicPartition = ck.Consumer, ck.Producer, ck.KafkaException, ck.TopicPartition


def transactional(bootstrap: str, tid: str, **extra) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5, **extra})
    producer.init_transactions(15)
    return producer


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expect: int | None = None,
             seconds: float = 10.0) -> list[bytes]:
    """Every value in ``topic`` (from the start, all partitions) as a consumer with ``isolation``
    reads it, polled until ``expect`` values or a quiet second."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4()}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + seconds
    quiet_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None or msg.error() is not None:
                if expect is None and time.monotonic() - quiet_since > 1.0:
                    break
                continue
            values.append(msg.value())
            quiet_since = time.monotonic()
            if expect is not None and len(values) >= expect:
                break
    finally:
        consumer.close()
    return values


def test_commit_and_abort_as_consumers_see_them(broker):
    create_topics(broker.bootstrap, ("tx-out", 3))
    producer = transactional(broker.bootstrap, "tx-basic")
    for round_, commit in enumerate([True, False, True]):
        producer.begin_transaction()
        for i in range(6):
            producer.produce("tx-out", value=b"r%d-%d" % (round_, i), partition=i % 3)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.flush(15)
            producer.abort_transaction(15)
    committed = read_all(broker.bootstrap, "tx-out", 3, "read_committed", expect=12)
    assert sorted(committed) == sorted([b"r0-%d" % i for i in range(6)] + [b"r2-%d" % i for i in range(6)])
    everything = read_all(broker.bootstrap, "tx-out", 3, "read_uncommitted", expect=18)
    assert len(everything) == 18                     # aborted records are in the log, markers are not shown


def test_an_open_transaction_holds_read_committed_readers_back(broker):
    create_topics(broker.bootstrap, ("tx-lso", 1))
    producer = transactional(broker.bootstrap, "tx-lso")
    producer.begin_transaction()
    producer.produce("tx-lso", value=b"pending")
    producer.flush(15)
    assert read_all(broker.bootstrap, "tx-lso", 1, "read_committed", seconds=2) == []
    assert read_all(broker.bootstrap, "tx-lso", 1, "read_uncommitted", expect=1) == [b"pending"]
    producer.commit_transaction(15)
    assert read_all(broker.bootstrap, "tx-lso", 1, "read_committed", expect=1) == [b"pending"]


def test_zombie_producer_is_fenced_by_its_new_incarnation(broker):
    """The recipe: the same transactional.id started again fences the old producer, whose open
    transaction is aborted; the old one's commit fails with a fatal PRODUCER_FENCED."""
    create_topics(broker.bootstrap, ("tx-zombie", 1))
    zombie = transactional(broker.bootstrap, "tx-zombie")
    zombie.begin_transaction()
    zombie.produce("tx-zombie", value=b"from the zombie")
    zombie.flush(15)
    successor = transactional(broker.bootstrap, "tx-zombie")      # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce("tx-zombie", value=b"from the successor")
    successor.commit_transaction(15)
    with pytest.raises(KafkaException) as failed:
        zombie.commit_transaction(15)
    error = failed.value.args[0]
    assert error.fatal() and error.code() in (ck.KafkaError._FENCED, ck.KafkaError.PRODUCER_FENCED,
                                              ck.KafkaError.INVALID_PRODUCER_EPOCH)
    assert read_all(broker.bootstrap, "tx-zombie", 1, "read_committed", expect=1) == [b"from the successor"]


class Worker:
    """One eos_worker process and the events it prints."""

    def __init__(self, bootstrap: str, name: str, linger: float = 0.0):
        self.name = name
        self.events: list[dict] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.eos_worker", bootstrap, "eos-group", "eos-in", "eos-out",
             name, "--linger-in-txn", str(linger), "--seconds", "60"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def saw(self, event: str) -> int:
        return sum(1 for e in self.events if e["event"] == event)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)


def test_exactly_once_consume_transform_produce_with_a_member_killed(start_broker):
    # the killed member's open transaction is aborted by its timeout (10 s), checked every second
    broker = start_broker({"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000,
                           "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000})
    partitions = 6
    create_topics(broker.bootstrap, ("eos-in", partitions), ("eos-out", partitions))
    produced = produce(broker.bootstrap, "eos-in", 300, partitions)
    victim = Worker(broker.bootstrap, "victim", linger=30.0)     # first: it gets records to hold
    workers = [victim]
    try:
        wait_until(lambda: victim.saw("in-transaction"), 60, "the victim inside a transaction")
        workers += [Worker(broker.bootstrap, "w1"), Worker(broker.bootstrap, "w2")]
        wait_until(lambda: all(w.saw("ready") for w in workers), 60, "three members")
        time.sleep(2)                                # they join; the victim's batch stays open
        victim.proc.kill()                           # SIGKILL between produce and commit
        victim.proc.wait(10)
        workers.append(Worker(broker.bootstrap, "w4"))
        produced |= produce(broker.bootstrap, "eos-in", 300, partitions, start=300)
        expect = len(produced)
        values = wait_until(lambda: (v := read_all(broker.bootstrap, "eos-out", partitions, "read_committed",
                                                   expect=expect, seconds=5)) and len(v) >= expect and v,
                            90, "every input record in the output", interval=0.5)
    finally:
        for w in workers:
            w.stop()
    sources = [tuple(v.decode().split(":")[:2]) for v in values]
    assert len(sources) == len(set(sources)), "an input record was transformed twice"
    assert {(str(p), str(o)) for _, p, o in produced} == set(sources)
