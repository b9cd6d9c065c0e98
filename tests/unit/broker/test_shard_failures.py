"""A shard task outlives whatever goes wrong in it: a step that throws, a disk that fills up.

Kafka's CoordinatorRuntime fails the operation (handleOperationException: UNKNOWN_SERVER_ERROR)
and reverts its state to the last written offset; a storage error turns the coordinator away
(KAFKA_STORAGE_ERROR -> NOT_COORDINATOR). Here the shard reloads from its log, and after a
failed write it reopens the log by itself, with backoff, once writes work again.
"""

from __future__ import annotations

import dataclasses
import errno
import logging

import pytest
import trio

from log_store.fs import FakeFS

from broker.group_runtime.shard_runner import RETRY_MAX_S, ShardRunner
from coordinator.result import StepFailed
from coordinator.shard import Shard
from offsets_log.journal import JournalWriter, read_journal
from offsets_log.log import ShardLog, shard_dir
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

from tests.unit.broker.test_shard_runner import (GROUP, PROTOCOL, SHARD, Heartbeat, JoinGroup, OffsetCommitReq,
                                                 OffsetFetch, describe, join_and_sync)

BOOM = "boom-group"


@pytest.fixture
def clock(autojump_clock):
    autojump_clock.autojump_threshold = 0.05
    return autojump_clock


class FaultyShard(Shard):
    """A shard with a bug: a request for :data:`BOOM` changes the state, decides an answer,
    then throws (as the shard reports any operation that throws midway)."""

    def handle(self, now, ctx, request):
        if getattr(request, "group_id", None) == BOOM:
            self.groups[GROUP].generation += 100          # half-made change, never written
            decided = self.result()
            decided.reply(ctx.token, ctx.api_key, ctx.version, None)
            try:
                raise RuntimeError("a bug")
            except RuntimeError as e:
                raise StepFailed(decided) from e
        return super().handle(now, ctx, request)


async def start(nursery, fs, shard_cls=Shard) -> ShardRunner:
    runner = ShardRunner(shard_cls(SHARD), lambda: ShardLog(shard_dir("/data", SHARD), fs),
                         wall_clock=lambda: 1e6)
    await nursery.start(runner.run)
    return runner


def commit_request(offset: int, member: str = "", generation: int = -1):
    topic = OffsetCommitReq.OffsetCommitRequestTopic
    return OffsetCommitReq(group_id=GROUP, generation_id_or_member_epoch=generation, member_id=member,
                           topics=(topic(name="orders", partitions=(topic.OffsetCommitRequestPartition(
                               partition_index=0, committed_offset=offset, committed_metadata=""),)),))


def commit_error(response) -> ErrorCode:
    return response.topics[0].partitions[0].error_code


async def fetch(runner):
    request = OffsetFetch(group_id=GROUP, topics=(OffsetFetch.OffsetFetchRequestTopic(
        name="orders", partition_indexes=(0,)),))
    return await runner.call(ApiKey.OFFSET_FETCH, 6, request)


async def committed(runner) -> int:
    return (await fetch(runner)).topics[0].partitions[0].committed_offset


async def heartbeat(runner, member: str) -> ErrorCode:
    return (await runner.call(ApiKey.HEARTBEAT, 4, Heartbeat(group_id=GROUP, generation_id=1, member_id=member))).error_code


async def test_a_step_that_throws_is_answered_and_the_shard_reloads_from_its_log(nursery, clock, caplog):
    fs = FakeFS()
    runner = await start(nursery, fs, FaultyShard)
    member = await join_and_sync(runner)
    assert commit_error(await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(5, member, 1))) == ErrorCode.NONE
    join = JoinGroup(group_id=GROUP, session_timeout_ms=10_000, rebalance_timeout_ms=20_000,
                     member_id="", protocol_type="consumer", protocols=(PROTOCOL,))
    second = (await runner.call(ApiKey.JOIN_GROUP, 5, join)).member_id
    parked = runner.submit(11, 5, dataclasses.replace(join, member_id=second))   # waits for the first
    await trio.sleep(0.1)
    assert not parked.decided
    with caplog.at_level(logging.ERROR, "groupbroker.shards"):
        bad = await runner.call(ApiKey.HEARTBEAT, 4, Heartbeat(group_id=BOOM, generation_id=1, member_id="x"),
                                client_host="/10.0.0.9")
    assert bad.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "Heartbeat v4 from /10.0.0.9" in line and "RuntimeError: a bug" in line
    await parked.wait_decided()                    # unloaded: Kafka answers NOT_COORDINATOR
    assert parked.response.error_code == ErrorCode.NOT_COORDINATOR
    while not runner.loaded:                       # meanwhile: COORDINATOR_LOAD_IN_PROGRESS
        assert (await describe(runner)).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await trio.sleep(0.01)
    group = await describe(runner)                 # the log's state: no half-made change
    assert (group.group_state, [m.member_id for m in group.members]) == ("Stable", [member])
    assert await heartbeat(runner, member) == ErrorCode.NONE
    assert await committed(runner) == 5


async def test_a_full_disk_turns_the_shard_away_until_it_has_room_again(nursery, clock, caplog):
    fs = FakeFS()
    runner = await start(nursery, fs)
    member = await join_and_sync(runner)
    assert commit_error(await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(1, member, 1))) == ErrorCode.NONE
    fs.disk.fail(errno.ENOSPC)
    assert commit_error(await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(2, member, 1))) == ErrorCode.NOT_COORDINATOR
    assert await heartbeat(runner, member) == ErrorCode.NOT_COORDINATOR
    # Still full: the shard reopens its log (reading works) and serves what needs no write ...
    while (await fetch(runner)).error_code != ErrorCode.NONE:    # NOT_COORDINATOR, then loading
        await heartbeat(runner, member)                           # (heartbeats pass "blindly")
        await trio.sleep(1)
    assert await heartbeat(runner, member) == ErrorCode.NONE      # the member is back
    assert await committed(runner) == 1
    # ... and a write fails again, with the same answer.
    assert commit_error(await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(3, member, 1))) == ErrorCode.NOT_COORDINATOR
    fs.disk.heal()
    started = trio.current_time()
    while commit_error(await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(4, member, 1))) != ErrorCode.NONE:
        assert trio.current_time() - started <= RETRY_MAX_S
        await heartbeat(runner, member)
        await trio.sleep(1)
    assert await committed(runner) == 4
    assert "serving again" in caplog.text


async def test_every_acknowledged_commit_survives_a_full_disk_and_a_restart(clock):
    fs = FakeFS()
    acknowledged = {}
    async with trio.open_nursery() as nursery:
        runner = await start(nursery, fs)
        for offset in range(1, 40):
            fs.disk.fail(errno.ENOSPC) if offset % 7 in (3, 4) else fs.disk.heal()   # full now and then
            fs.fail_partial = offset % 5                       # with torn writes
            response = await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(offset))
            if commit_error(response) == ErrorCode.NONE:
                acknowledged[offset] = True
                last = offset
            await trio.sleep(3)
        nursery.cancel_scope.cancel()
    assert len(acknowledged) > 10
    async with trio.open_nursery() as nursery:
        fs.disk.heal()
        runner = await start(nursery, fs)
        assert await committed(runner) == last
        nursery.cancel_scope.cancel()


def test_the_journal_drops_events_with_one_warning_and_resumes(caplog):
    fs = FakeFS()
    writer = JournalWriter("/data/journal", 1_000, fs=fs, buffer_bytes=1)
    writer.append({"t": 1_000, "event": "a"})
    fs.disk.fail(errno.ENOSPC)
    fs.fail_partial = 5                                      # torn writes too
    with caplog.at_level(logging.WARNING):
        for i in range(5):
            writer.append({"t": 1_001 + i, "event": "lost"})
        fs.disk.heal()
        writer.append({"t": 2_000, "event": "b"})
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "dropping events" in warnings[0] and "5 events" in warnings[1]
    assert [(e["event"], e["seq"]) for e in read_journal("/data/journal", fs)] == [("a", 0), ("b", 6)]


async def test_a_shard_whose_load_fails_is_retried_instead_of_ending_the_broker(clock):
    class ReadFailsOnce(Shard):
        failures = 1

        def replay(self, record):
            if ReadFailsOnce.failures:
                ReadFailsOnce.failures -= 1
                raise OSError(5, "injected: read failed")
            super().replay(record)

    fs = FakeFS()
    async with trio.open_nursery() as nursery:
        runner = await start(nursery, fs)
        assert commit_error(await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(7))) == ErrorCode.NONE
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        runner = await start(nursery, fs, ReadFailsOnce)
        assert (await fetch(runner)).error_code == ErrorCode.NOT_COORDINATOR
        while (await fetch(runner)).error_code != ErrorCode.NONE:
            await trio.sleep(0.5)
        assert await committed(runner) == 7
        nursery.cancel_scope.cancel()
