"""Consumers of one group, each on its own thread, and a ledger of what they owned.

Shared by the online-upgrade recipe and the mixed-group tests. Each member reports what it
owns from its own rebalance callbacks (kafka-python's ConsumerRebalanceListener, eager;
confluent-kafka's incremental on_assign/on_revoke/on_lost); a callback that releases a
partition runs before the member tells the coordinator and one that takes a partition runs
after the coordinator handed it over, so one table of owners across the threads sees any
partition handed to two members at once. Members commit what they consumed after each batch.
"""

from __future__ import annotations

import threading
import time
from collections import Counter


class Ledger:
    """Owners by the members' callbacks, and every record delivered to an owner."""

    def __init__(self):
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.delivered: Counter = Counter()           # (partition, offset) -> deliveries
        self.violations: list[str] = []
        self.history: list[tuple[float, str, str, list[int]]] = []

    def assigned(self, name: str, partitions: list[int]) -> None:
        with self.lock:
            self.history.append((time.monotonic(), name, "assign", partitions))
            for p in partitions:
                other = self.owner.get(p)
                if other not in (None, name):
                    self.violations.append(f"partition {p} assigned to {name} while {other} holds it")
                self.owner[p] = name

    def released(self, name: str, partitions: list[int], how: str = "revoke") -> None:
        with self.lock:
            self.history.append((time.monotonic(), name, how, partitions))
            for p in partitions:
                if self.owner.get(p) == name:
                    del self.owner[p]

    def consumed(self, name: str, partition: int, offset: int) -> bool:
        with self.lock:
            if self.owner.get(partition) != name:
                self.violations.append(f"{name} was given {partition}@{offset} while "
                                       f"{self.owner.get(partition)} holds the partition")
                return False
            self.delivered[(partition, offset)] += 1
            return True

    def of(self, name: str) -> list[int]:
        with self.lock:
            return sorted(p for p, n in self.owner.items() if n == name)

    def owners(self) -> dict[str, list[int]]:
        with self.lock:
            held: dict[str, list[int]] = {}
            for p, n in sorted(self.owner.items()):
                held.setdefault(n, []).append(p)
            return held


class Member(threading.Thread):
    """A consumer on its own thread: opened, polled until :meth:`stop`, closed there too."""

    def __init__(self, name: str, ledger: Ledger, bootstrap: str, group: str, topic: str):
        super().__init__(daemon=True, name=name)
        self.ledger, self.bootstrap, self.group, self.topic = ledger, bootstrap, group, topic
        self.error: BaseException | None = None
        self.opened = threading.Event()
        self._halt = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            self.open()
            self.opened.set()
            while not self._halt.is_set():
                self.poll()
        except BaseException as e:            # the test reports it
            self.error = e
        finally:
            try:
                self.close()
            except BaseException as e:
                self.error = self.error or e

    def stop(self) -> None:
        self._halt.set()
        self.join(30)
        assert not self.is_alive(), f"{self.name} did not close within 30 s"


class ClassicMember(Member):
    """kafka-python 3: JoinGroup/SyncGroup/Heartbeat, eager range/roundrobin assignors."""

    protocol = "classic"

    def open(self) -> None:
        import kafka

        ledger, name = self.ledger, self.name

        class Listener(kafka.ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                ledger.released(name, sorted(tp.partition for tp in revoked), "revoke")

            def on_partitions_assigned(self, assigned):
                ledger.assigned(name, sorted(tp.partition for tp in assigned))

            def on_partitions_lost(self, lost):
                ledger.released(name, sorted(tp.partition for tp in lost), "lost")

        self.consumer = kafka.KafkaConsumer(
            client_id=name, bootstrap_servers=self.bootstrap, group_id=self.group,
            enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=6000,
            heartbeat_interval_ms=300, max_poll_interval_ms=20000)
        self.consumer.partitions_for_topic(self.topic)
        self.consumer.subscribe([self.topic], listener=Listener())

    def poll(self) -> None:
        batch = self.consumer.poll(timeout_ms=500)
        for tp, records in batch.items():
            for record in records:
                self.ledger.consumed(self.name, tp.partition, record.offset)
        if batch:
            self.consumer.commit()           # the positions after what this poll returned

    def close(self) -> None:
        if hasattr(self, "consumer"):
            self.consumer.close()            # on_partitions_revoked, then LeaveGroup


class ConsumerMember(Member):
    """confluent-kafka, ``group.protocol=consumer``: incremental callbacks. A commit that fails
    (e.g. STALE_MEMBER_EPOCH right after an epoch bump: librdkafka does not retry manual
    commits) stays pending and goes out again with the next one or in on_revoke."""

    protocol = "consumer"

    def open(self) -> None:
        import confluent_kafka as ck

        self.member_id: str | None = None
        self.pending: dict[int, int] = {}
        self.commit_errors: list[str] = []
        self.consumer = ck.Consumer({
            "bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.name,
            "group.protocol": "consumer", "auto.offset.reset": "earliest",
            "enable.auto.commit": False, "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000})
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._lost)

    def _assigned(self, _consumer, partitions) -> None:
        self.ledger.assigned(self.name, sorted(tp.partition for tp in partitions))

    def _revoked(self, _consumer, partitions) -> None:
        self._commit()
        for tp in partitions:
            if self.pending.pop(tp.partition, None) is not None:
                self.commit_errors.append(f"partition {tp.partition} revoked with uncommitted offsets")
        self.ledger.released(self.name, sorted(tp.partition for tp in partitions), "revoke")

    def _lost(self, _consumer, partitions) -> None:
        for tp in partitions:
            self.pending.pop(tp.partition, None)
        self.ledger.released(self.name, sorted(tp.partition for tp in partitions), "lost")

    def poll(self) -> None:
        import confluent_kafka as ck

        self.member_id = self.consumer.memberid()     # read here: a call from another thread can hang
        for m in self.consumer.consume(500, 0.2):
            if m.error():
                raise ck.KafkaException(m.error())
            if self.ledger.consumed(self.name, m.partition(), m.offset()):
                self.pending[m.partition()] = m.offset() + 1
        self._commit()

    def _commit(self) -> None:
        import confluent_kafka as ck

        todo = dict(self.pending)
        if not todo:
            return
        try:
            answer = self.consumer.commit(
                offsets=[ck.TopicPartition(self.topic, p, o) for p, o in todo.items()], asynchronous=False)
            failed = {tp.partition: tp.error for tp in answer if tp.error is not None}
        except ck.KafkaException as e:
            failed = dict.fromkeys(todo, e.args[0])
        for p, o in todo.items():
            if p in failed:
                self.commit_errors.append(f"{p}@{o}: {failed[p]}")
            elif self.pending.get(p) == o:
                del self.pending[p]

    def close(self) -> None:
        if hasattr(self, "consumer"):
            self.consumer.close()            # on_revoke, then the leave heartbeat (epoch -1)
