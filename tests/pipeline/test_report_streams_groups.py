"""The report's streams-group section: a streams group (KIP-1071) scaled from one member to
three and back to two, with one standby replica, as the journal records its target assignments
and streams_task_moves counts what moved."""

from __future__ import annotations

import trio

from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess
from kafka_client.blocking import BlockingClient
from pipeline.job import build_tables
from pipeline.report import gather
from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS
from tests.support.streams_wire import StreamsMember
from tests.support.trio_client import TrioClient

SETTINGS = {**TEST_DEFAULTS, "group.streams.initial.rebalance.delay.ms": "0",
            "group.streams.assignment.interval.ms": "0"}


async def scale(port: int) -> None:
    client = await TrioClient.connect(port)
    members = [StreamsMember(client, "app", f"member-{n}", "input") for n in range(3)]

    async def settle(live):
        for _ in range(4):
            for m in live:
                await m.beat()
    await members[0].join()
    await settle(members[:1])
    for m in members[1:]:
        await m.join()
    await settle(members)
    members[2].epoch = -1
    await members[2].beat()                                 # leaves
    await settle(members[:2])
    await client.aclose()


def test_task_moves(tmp_path, spark):
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", SETTINGS).start()
    try:
        admin = BlockingClient("127.0.0.1", broker.port)
        topics = REQUESTS[ApiKey.CREATE_TOPICS].cls
        admin.call(ApiKey.CREATE_TOPICS, 7, topics(topics=(topics.CreatableTopic(
            name="input", num_partitions=6, replication_factor=1, assignments=(), configs=()),), timeout_ms=10000,
            validate_only=False))
        admin.close()
        trio.run(scale, broker.port)
        assert broker.stop() == 0
    finally:
        broker.kill()
    built, events = build_tables(spark, [str(tmp_path / "data")])
    try:
        rows = sorted(built["streams_task_moves"].collect(), key=lambda r: r["epoch"])
        sizes = [(r["members"], r["active_tasks"], r["active_new"], r["active_moved"]) for r in rows]
        # one member takes all six tasks; a second takes three of them; a third two, one from
        # each (sticky: nothing else moves); when it leaves, the two take its two back
        assert sizes == [(1, 6, 6, 0), (2, 6, 0, 3), (3, 6, 0, 2), (2, 6, 0, 2)], sizes
        assert rows[-1]["placement"] == "member-0: 3+0; member-1: 3+0", rows[-1]
        page = gather(built, events)
        assert len(page["task_moves"]) == len(rows)
    finally:
        events.unpersist()
