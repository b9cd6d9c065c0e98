"""A shard driven by its trio task: timers on trio's (mock) clock, durable replies, restarts."""

import dataclasses
import threading
import time

import pytest
import trio

from log_store.fs import FakeFS

from broker.group_runtime.flusher import Flusher
from broker.group_runtime.shard_runner import ShardRunner
from coordinator.routing import shard_for
from coordinator.shard import Shard
from offsets_log.flush import FlushPolicy
from offsets_log.log import ShardLog, segment_bases, shard_dir
from offsets_log.records import OffsetCommit, decode_record
from offsets_log.segment import scan
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

GROUP = "mykafka-group_4"
SHARD = shard_for(GROUP)
JoinGroup, SyncGroup, Heartbeat = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.SYNC_GROUP].cls, REQUESTS[ApiKey.HEARTBEAT].cls
OffsetCommitReq, OffsetFetch, DescribeGroups = REQUESTS[ApiKey.OFFSET_COMMIT].cls, REQUESTS[ApiKey.OFFSET_FETCH].cls, REQUESTS[ApiKey.DESCRIBE_GROUPS].cls
PROTOCOL = JoinGroup.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\x00\x00")


@pytest.fixture
def clock(autojump_clock):
    """Jump only after real idleness: an fsync in a worker thread must not look like idle time."""
    autojump_clock.autojump_threshold = 0.05
    return autojump_clock


async def start(nursery, data_dir, fs=None, **flush) -> ShardRunner:
    """A runner on its own; ``flush``: Kafka's log.flush.* settings (FlushPolicy's names)."""
    flusher = Flusher(FlushPolicy(**flush))
    runner = ShardRunner(Shard(SHARD), lambda: ShardLog(shard_dir(str(data_dir), SHARD), fs),
                         wall_clock=lambda: 1e6, flusher=flusher)
    nursery.start_soon(flusher.run, [runner])
    await nursery.start(runner.run)
    return runner


async def join_and_sync(runner, session_ms=10_000):
    join = JoinGroup(group_id=GROUP, session_timeout_ms=session_ms, rebalance_timeout_ms=20_000,
                     member_id="", protocol_type="consumer", protocols=(PROTOCOL,))
    first = await runner.call(ApiKey.JOIN_GROUP, 5, join, client_id="app")
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    joined = await runner.call(ApiKey.JOIN_GROUP, 5, dataclasses.replace(join, member_id=first.member_id), client_id="app")
    assert joined.error_code == ErrorCode.NONE and joined.generation_id == 1
    synced = await runner.call(ApiKey.SYNC_GROUP, 3, SyncGroup(
        group_id=GROUP, generation_id=1, member_id=joined.member_id,
        assignments=(SyncGroup.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"A"),)))
    assert synced.error_code == ErrorCode.NONE and synced.assignment == b"A"
    return joined.member_id


async def describe(runner):
    (group,) = (await runner.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroups(groups=(GROUP,)))).groups
    return group


async def test_initial_delay_and_session_expiry_run_on_the_mock_clock(nursery, tmp_path, clock):
    runner = await start(nursery, tmp_path)
    started = trio.current_time()
    member = await join_and_sync(runner)
    # the first JoinGroup of a new group is held for group.initial.rebalance.delay.ms (3 s)
    assert trio.current_time() - started >= 3.0
    assert (await describe(runner)).group_state == "Stable"
    await trio.sleep(9)
    hb = await runner.call(ApiKey.HEARTBEAT, 4, Heartbeat(group_id=GROUP, generation_id=1, member_id=member))
    assert hb.error_code == ErrorCode.NONE
    await trio.sleep(10.5)                      # no heartbeat for longer than the 10 s session
    group = await describe(runner)
    assert group.group_state == "Empty" and group.members == ()
    hb = await runner.call(ApiKey.HEARTBEAT, 4, Heartbeat(group_id=GROUP, generation_id=1, member_id=member))
    assert hb.error_code == ErrorCode.UNKNOWN_MEMBER_ID


async def test_commit_is_on_disk_when_acknowledged_and_survives_restart(tmp_path, clock):
    async with trio.open_nursery() as nursery:
        runner = await start(nursery, tmp_path)
        member = await join_and_sync(runner)
        topic = OffsetCommitReq.OffsetCommitRequestTopic
        commit = OffsetCommitReq(group_id=GROUP, generation_id_or_member_epoch=1, member_id=member,
                                 topics=(topic(name="orders", partitions=(
                                     topic.OffsetCommitRequestPartition(partition_index=0, committed_offset=42,
                                                                        committed_metadata="m"),)),))
        response = await runner.call(ApiKey.OFFSET_COMMIT, 8, commit)
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
        # acknowledged => readable from the files by an independent reader
        on_disk = [decode_record(r.key, r.value) for _, r in
                   ShardLog(shard_dir(str(tmp_path), SHARD)).read_all()]
        assert any(isinstance(r, OffsetCommit) and r.offset == 42 for r in on_disk)
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        runner = await start(nursery, tmp_path)
        fetch = OffsetFetch(group_id=GROUP, topics=(OffsetFetch.OffsetFetchRequestTopic(
            name="orders", partition_indexes=(0, 1)),))
        got = await runner.call(ApiKey.OFFSET_FETCH, 6, fetch)
        assert [(p.partition_index, p.committed_offset, p.metadata) for p in got.topics[0].partitions] == \
            [(0, 42, "m"), (1, -1, "")]
        group = await describe(runner)        # a group with members comes back Stable
        assert (group.group_state, [m.member_id for m in group.members]) == ("Stable", [member])
        nursery.cancel_scope.cancel()


def commit_request(offset: int, partition: int = 0):
    topic = OffsetCommitReq.OffsetCommitRequestTopic
    return OffsetCommitReq(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=(
        topic(name="orders", partitions=(topic.OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata=""),)),))


class SlowFsyncFS(FakeFS):
    """fsyncs that take a while, and are counted: an answer sent before its fsync ended
    would find its commit not yet durable."""

    def __init__(self):
        super().__init__()
        self.fsyncs = 0

    def fsync(self, path: str) -> None:
        time.sleep(0.01)
        super().fsync(path)
        self.fsyncs += 1


def durable_commits(fs: FakeFS) -> set[tuple[int, int]]:
    """(partition, offset) of every commit that a power cut right now would keep."""
    directory = shard_dir("/data", SHARD)
    found = set()
    for base in segment_bases(fs, directory):
        node = fs.durable_entries.get(f"{directory}/{base:020d}.log")
        for frame in scan(bytes(node.durable) if node else b"")[0]:
            record = decode_record(frame.key, frame.value) if not frame.is_marker else None
            if isinstance(record, OffsetCommit):
                found.add((record.partition, record.offset))
    return found


async def test_with_flush_interval_messages_1_every_commit_is_fsynced_before_its_answer(nursery, clock):
    fs = SlowFsyncFS()
    runner = await start(nursery, "/data", fs, interval_messages=1)
    answered = []

    async def committer(partition: int) -> None:
        for offset in range(8):
            response = await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(offset, partition))
            assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
            assert (partition, offset) in durable_commits(fs)      # at the moment of the answer
            answered.append((partition, offset))

    async with trio.open_nursery() as committers:
        for partition in range(4):
            committers.start_soon(committer, partition)
    assert len(answered) == 32
    assert fs.fsyncs < 32                   # passes covered commits that arrived meanwhile


async def test_by_default_a_commit_is_answered_once_written_and_flushed_by_the_scheduler(nursery, clock):
    fs = SlowFsyncFS()
    runner = await start(nursery, "/data", fs, scheduler_interval_ms=5_000)
    for offset in range(3):
        response = await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(offset))
        assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert fs.fsyncs == 0 and durable_commits(fs) == set()      # written: a killed process keeps it
    assert {(0, 0), (0, 1), (0, 2)} <= {(r.partition, r.offset) for r in (
        decode_record(r.key, r.value) for _, r in ShardLog(shard_dir("/data", SHARD), fs).read_all())
        if isinstance(r, OffsetCommit)}
    await trio.sleep(5.5)                  # log.flush.scheduler.interval.ms: the periodic flush
    assert fs.fsyncs == 1 and durable_commits(fs) == {(0, 0), (0, 1), (0, 2)}


async def test_a_failed_fsync_turns_the_shard_away_instead_of_acknowledging(nursery, tmp_path, clock):
    fs = FakeFS()
    runner = await start(nursery, "/data", fs, interval_messages=1)
    fs.fail_next_fsync = True
    response = await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(7))
    assert response.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR
    again = await runner.call(ApiKey.OFFSET_COMMIT, 8, commit_request(7))
    assert again.topics[0].partitions[0].error_code == ErrorCode.NOT_COORDINATOR


class StallingFS(FakeFS):
    """A disk on which a compaction stops until released: at its cleaned segment's fsync
    (``during="cleaning"``), or inside the swap of the old segments (``during="swap"``)."""

    def __init__(self, during: str):
        super().__init__()
        self.during = during
        self.compacting, self.release = threading.Event(), threading.Event()

    def _stall(self) -> None:
        self.compacting.set()
        self.release.wait(30)

    def fsync(self, path: str) -> None:
        if self.during == "cleaning" and path.endswith(".cleaned"):
            self._stall()
        super().fsync(path)

    def rename(self, src: str, dst: str) -> None:
        super().rename(src, dst)
        if self.during == "swap" and dst.endswith(".swap"):
            self._stall()


@pytest.mark.parametrize("during", ["cleaning", "swap"])
async def test_the_shard_answers_and_writes_while_its_log_compacts(nursery, during):
    """Compaction runs beside the shard: a commit is answered (and durable) while a
    compaction is stuck on the disk, even within its swap, and the compaction then completes."""
    fs = StallingFS(during)
    runner = ShardRunner(Shard(SHARD), lambda: ShardLog(shard_dir("/data", SHARD), fs, segment_bytes=300),
                         compact_interval_s=0.05, wall_clock=lambda: 1e6)
    await nursery.start(runner.run)

    def commit(offset: int):
        topic = OffsetCommitReq.OffsetCommitRequestTopic
        return runner.call(ApiKey.OFFSET_COMMIT, 8, OffsetCommitReq(
            group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", topics=(topic(
                name="orders", partitions=(topic.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=offset, committed_metadata=""),)),)))

    for offset in range(10):                       # several sealed segments to compact
        await commit(offset)
    await trio.to_thread.run_sync(fs.compacting.wait, 10)
    try:
        with trio.fail_after(5):
            answer = await commit(100)
        assert answer.topics[0].partitions[0].error_code == ErrorCode.NONE
        assert runner.compacting
    finally:
        fs.release.set()
    with trio.fail_after(5):
        while runner.compacting:
            await trio.sleep(0.01)
    fetch = await runner.call(ApiKey.OFFSET_FETCH, 7, OffsetFetch(group_id=GROUP, topics=None))
    assert fetch.topics[0].partitions[0].committed_offset == 100


async def test_the_group_configs_reach_the_shard_as_they_change(nursery, tmp_path, clock):
    """The runner hands the shard the dynamic group configs before a step whenever the broker's
    config APIs replaced them (and again after a reload)."""
    runner = await start(nursery, tmp_path)
    hb = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls

    async def interval() -> int:
        answer = await runner.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, hb(
            group_id=GROUP, member_id="member-000000000000001", member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=(), topic_partitions=()))
        assert answer.error_code == ErrorCode.NONE, answer
        return answer.heartbeat_interval_ms

    assert await interval() == 5_000                     # group.consumer.heartbeat.interval.ms
    configs = {GROUP: {"consumer.heartbeat.interval.ms": "6000"}}
    runner.group_configs = lambda: configs
    assert await interval() == 6_000
    configs = {GROUP: {"consumer.heartbeat.interval.ms": "7000"}}   # a new mapping: a change
    assert await interval() == 7_000
