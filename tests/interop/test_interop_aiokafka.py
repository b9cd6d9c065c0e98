"""Issue 5 interop matrix: aiokafka 0.14.0 (asyncio) against ``groupbroker serve``.

The broker is its own process (broker.testing.launcher.BrokerProcess); the group members are
AIOKafkaConsumers on one asyncio event loop, run with ``asyncio.run`` inside a plain sync test
(the suite's pytest runs in trio mode; nothing here touches trio). Each member is a task that
reads with ``getmany()`` and commits exactly what it read with ``commit({tp: offset})``
before reading again.

The lifecycle: produce, 3 members consume everything, a 4th joins and the group rebalances,
one leaves with ``stop()`` (LeaveGroup), the committed offsets read back with ``committed()``
equal what was consumed (the log end). A member's generation is aiokafka's
``_coordinator.generation`` (no public accessor in 0.14).
"""

from __future__ import annotations

import asyncio
import time


from tests.support.processes import (BatchRecorder, check_exactly_once, committed_records, import_client,
                                     settled_generation, state_changes)

import_client("aiokafka")          # CI: fail, not skip, when it is missing
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition  # noqa: E402
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # noqa: E402
from aiokafka.errors import CommitFailedError, KafkaError  # noqa: E402

PARTITIONS = 6


async def until(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


async def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        await admin.close()


async def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> set:
    """``count`` messages round-robin over the partitions; the (partition, offset) of each."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    await producer.start()
    try:
        futures = [await producer.send(topic, value=b"m%d" % i, key=b"k%d" % i,
                                       partition=i % PARTITIONS)
                   for i in range(start, start + count)]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), 30)
        return {(m.partition, m.offset) for m in metadata}
    finally:
        await producer.stop()


class Member(ConsumerRebalanceListener):
    """One AIOKafkaConsumer and the task that reads and commits for it."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str):
        self.name, self.topic = name, topic
        self.recorder = BatchRecorder(name)
        self.events: list[tuple[str, list[int]]] = []
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, client_id=name,
            enable_auto_commit=False, auto_offset_reset="earliest",
            session_timeout_ms=6000, heartbeat_interval_ms=300, max_poll_interval_ms=10000,
            fetch_max_wait_ms=100, metadata_max_age_ms=5000)
        self.task: asyncio.Task | None = None
        self.stopping = False

    async def on_partitions_revoked(self, revoked):
        self.events.append(("revoke", sorted(tp.partition for tp in revoked)))

    async def on_partitions_assigned(self, assigned):
        self.events.append(("assign", sorted(tp.partition for tp in assigned)))

    async def start(self) -> Member:
        await self.consumer.start()
        self.consumer.subscribe([self.topic], listener=self)
        self.task = asyncio.create_task(self._run(), name=self.name)
        return self

    async def _run(self) -> None:
        while not self.stopping:
            batches = await self.consumer.getmany(timeout_ms=100, max_records=500)
            records, offsets = [], {}
            for tp, messages in batches.items():
                for m in messages:
                    records.append((m.partition, m.offset))
                offsets[tp] = messages[-1].offset + 1
            if not records:
                continue
            entry = self.recorder.batch(records)
            try:
                await self.consumer.commit(offsets)
                BatchRecorder.committed(entry, True)
            except (CommitFailedError, KafkaError) as e:     # redelivered to the next owner
                BatchRecorder.committed(entry, False, e)

    @property
    def assignment(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    @property
    def generation(self) -> int:
        return self.consumer._coordinator.generation

    @property
    def member_id(self) -> str:
        return self.consumer._coordinator.member_id

    def check(self) -> None:
        """Re-raise what killed the member's task, if anything did."""
        if self.task is not None and self.task.done():
            self.task.result()

    async def stop(self) -> None:
        """Finish the current read-and-commit, then stop() the consumer (LeaveGroup)."""
        if self.task is None:
            return
        self.stopping = True
        task, self.task = self.task, None
        try:
            await asyncio.wait_for(task, 10)
        finally:
            await self.consumer.stop()


def settled(members, newer_than: int = 0):
    """The members' shared generation once their assignments are disjoint, non-empty and cover
    every partition; falsy until then."""
    for m in members:
        m.check()
    return settled_generation([(m.assignment, m.generation) for m in members], PARTITIONS, newer_than)


async def all_committed(members, produced: set, timeout: float) -> None:
    def done():
        for m in members:
            m.check()
        return committed_records([m.recorder for m in members]) >= produced
    await until(done, timeout, f"{len(produced)} records committed")


async def lifecycle(broker) -> None:
    bootstrap, topic, group = broker.bootstrap, "orders", "lifecycle-aiokafka"
    await create_topic(bootstrap, topic, PARTITIONS)
    produced = await produce(bootstrap, topic, 1200)
    members: list[Member] = []

    async def member(name):
        m = Member(name, bootstrap, group, topic)
        members.append(m)
        return await m.start()

    try:
        # 1. three members: the 1,200 records already there and 1,200 more once they settled
        c1, c2, c3 = [await member(n) for n in ("c1", "c2", "c3")]
        gen3 = await until(lambda: settled([c1, c2, c3]), 20, "3 members sharing 6 partitions")
        assert all(len(m.assignment) == 2 for m in (c1, c2, c3))
        produced |= await produce(bootstrap, topic, 1200, start=1200)
        await all_committed(members, produced, 15)
        assert check_exactly_once(produced, [m.recorder for m in members])["committed"] == 2400

        # 2. a 4th member joins: the group rebalances to 2+2+1+1
        c4 = await member("c4")
        gen4 = await until(lambda: settled(members, newer_than=gen3), 20,
                           "4 members sharing 6 partitions")
        assert sorted(len(m.assignment) for m in members) == [1, 1, 2, 2]
        changes = state_changes(broker.log_text(), group)
        assert any(c["before"] == "Stable" and c["after"] == "PreparingRebalance"
                   and c["generation"] == gen3 and "adding member c4-" in c["reason"] for c in changes)
        more = await produce(bootstrap, topic, 1200, start=2400)
        produced |= more
        await all_committed(members, produced, 15)
        assert check_exactly_once(produced, [m.recorder for m in members])["committed"] == 3600
        assert any(r in more for b in c4.recorder.batches() for r in b["records"]), "c4 read nothing"

        # 3. c2 leaves with stop() (LeaveGroup): the 3 others take over its partitions
        leaver_id, leaver_parts = c2.member_id, c2.assignment
        await c2.stop()
        survivors = [c1, c3, c4]
        gen5 = await until(lambda: settled(survivors, newer_than=gen4), 15,
                           "the leaver's partitions to move")
        assert gen5 == gen4 + 1, "a LeaveGroup is one rebalance"
        assert leaver_parts <= set().union(*(m.assignment for m in survivors))
        left = [c for c in state_changes(broker.log_text(), group)
                if c["reason"] == "members left the group"]
        assert left and left[0]["generation"] == gen4 and leaver_id not in left[0]["members"]
        produced |= await produce(bootstrap, topic, 1200, start=3600)
        await all_committed(members, produced, 15)
        assert check_exactly_once(produced, [m.recorder for m in members])["committed"] == 4800

        # 4. the committed offsets read back are exactly what was consumed: the log end
        consumed_to: dict[int, int] = {}
        for m in members:
            for b in m.recorder.batches():
                for p, o in b["records"]:
                    consumed_to[p] = max(consumed_to.get(p, 0), o + 1)
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        ends = {tp.partition: o for tp, o in (await c1.consumer.end_offsets(tps)).items()}
        assert ends == {p: 800 for p in range(PARTITIONS)}
        committed = {tp.partition: await c3.consumer.committed(tp) for tp in tps}
        assert committed == consumed_to == ends

        for m in survivors:
            await m.stop()
        await until(lambda: any(c["after"] == "Empty" and not c["members"]
                                for c in state_changes(broker.log_text(), group)),
                    10, "the group to become Empty")
    finally:
        for m in members:
            try:
                await m.stop()
            except Exception:
                pass


def test_group_lifecycle_aiokafka(broker):
    """produce -> 3 members consume everything -> a 4th joins -> one leaves -> offsets read back;
    every record committed exactly once (check_exactly_once)."""
    asyncio.run(asyncio.wait_for(lifecycle(broker), 60))
