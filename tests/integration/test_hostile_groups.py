"""Hostile group requests against a real ``groupbroker serve``: each gets Kafka's answer, the
broker stays up, a healthy group on another connection keeps its generation, and the offsets
log verifies after a restart.

Kafka's answers: a STRING over 32,767 bytes makes the request unreadable (its generated
readers throw), so the connection closes; a member id too long to store, or group metadata
over message.max.bytes, fails the write operation: UNKNOWN_SERVER_ERROR (for SyncGroup every
waiting member's, and the group rebalances again).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import subprocess
import sys

import pytest
import trio

from tests.support.processes import REPO
from coordinator.java_order import shard_order
from coordinator.routing import shard_for
from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.header import encode_request
from tests.support.trio_client import TrioClient
from tests.support.wire import join_stable_member

JoinGroup, SyncGroup, Heartbeat = REQUESTS[ApiKey.JOIN_GROUP].cls, REQUESTS[ApiKey.SYNC_GROUP].cls, REQUESTS[ApiKey.HEARTBEAT].cls
OffsetCommit, OffsetFetch, DescribeGroups = REQUESTS[ApiKey.OFFSET_COMMIT].cls, REQUESTS[ApiKey.OFFSET_FETCH].cls, REQUESTS[ApiKey.DESCRIBE_GROUPS].cls
SETTINGS = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}
HEALTHY = "healthy-group"


def join_request(group: str, *, member_id: str = "", instance: str | None = None,
                 metadata: bytes = b"") -> JoinGroup:
    return JoinGroup(group_id=group, session_timeout_ms=6000, rebalance_timeout_ms=6000,
                     member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                     protocols=(JoinGroup.JoinGroupRequestProtocol(name="range", metadata=metadata),))


def commit_request(group: str, offset: int, *, member: str = "", generation: int = -1) -> OffsetCommit:
    topic = OffsetCommit.OffsetCommitRequestTopic
    return OffsetCommit(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                        topics=(topic(name="orders", partitions=(topic.OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=offset),)),))


def fetch_request(group: str) -> OffsetFetch:
    return OffsetFetch(group_id=group, topics=(OffsetFetch.OffsetFetchRequestTopic(
        name="orders", partition_indexes=(0,)),))


class HealthyMember:
    """One member of a Stable group, heartbeating on its own connection; every answer kept."""

    def __init__(self, port: int):
        self.port = port
        self.answers: list[ErrorCode] = []

    async def start(self, nursery) -> None:
        self.client = await TrioClient.connect(self.port)
        create = REQUESTS[ApiKey.CREATE_TOPICS].cls
        await self.client.call(ApiKey.CREATE_TOPICS, 5, create(timeout_ms=5000, topics=(create.CreatableTopic(
            name="orders", num_partitions=1, replication_factor=1),)))
        self.member, self.generation = await join_stable_member(self.client, HEALTHY,
                                                                session_timeout_ms=6000)
        commit = commit_request(HEALTHY, 42, member=self.member, generation=self.generation)
        assert (await self.client.call(ApiKey.OFFSET_COMMIT, 8, commit)).topics[0].partitions[0].error_code == 0
        nursery.start_soon(self._beat)

    async def _beat(self) -> None:
        while True:
            hb = Heartbeat(group_id=HEALTHY, generation_id=self.generation, member_id=self.member)
            self.answers.append((await self.client.call(ApiKey.HEARTBEAT, 4, hb)).error_code)
            await trio.sleep(0.5)

    def kept_its_generation(self) -> bool:
        return len(self.answers) > 2 and set(self.answers) == {ErrorCode.NONE}


async def closes_the_connection(port: int, api_key: int, version: int, body, client_id="attacker") -> bool:
    client = await TrioClient.connect(port)
    try:
        await client.send_raw(encode_request(api_key, version, 1, body, client_id))
        return await client.closed_by_peer()
    finally:
        await client.aclose()


async def answer(port: int, api_key: int, version: int, body, client_id: str = "attacker"):
    client = await TrioClient.connect(port, client_id=client_id)
    try:
        return await client.call(api_key, version, body)
    finally:
        await client.aclose()


def log_verify(data_dir) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "broker", "log", "verify", str(data_dir)], cwd=REPO,
                          capture_output=True, text=True)


@pytest.mark.parametrize("length", [40_000, 10 << 20])
async def test_strings_too_long_for_kafka_close_the_connection_only(start_broker, length):
    broker = start_broker(SETTINGS)
    healthy = HealthyMember(broker.port)
    async with trio.open_nursery() as nursery:
        await healthy.start(nursery)
        group = "g" * length
        for api_key, version, body in [
                (11, 9, join_request(group)),
                (8, 8, commit_request(group, 1)),
                (9, 6, fetch_request(group)),
                (15, 5, DescribeGroups(groups=(group,))),
                (11, 9, join_request("fine", instance="i" * length))]:
            assert await closes_the_connection(broker.port, api_key, version, body), api_key
        await trio.sleep(1.5)
        assert broker.running() and healthy.kept_its_generation()
        nursery.cancel_scope.cancel()
    assert broker.stop() == 0
    assert log_verify(broker.data_dir).returncode == 0
    assert "string" in broker.log_text() and "Traceback" not in broker.log_text()


async def test_ids_whose_member_id_cannot_be_stored_get_unknown_server_error(start_broker):
    broker = start_broker(SETTINGS)
    healthy = HealthyMember(broker.port)
    longest_fine = 0x7FFF - 37                       # the member id adds "-" and a UUID
    async with trio.open_nursery() as nursery:
        await healthy.start(nursery)
        for version in (3, 5, 9):
            too_long = await answer(broker.port, 11, version, join_request("g1"),
                                    client_id="c" * (longest_fine + 1))
            assert (too_long.error_code, too_long.member_id) == (ErrorCode.UNKNOWN_SERVER_ERROR, "")
        fine = await answer(broker.port, 11, 5, join_request("g1"), client_id="c" * longest_fine)
        assert fine.error_code == ErrorCode.MEMBER_ID_REQUIRED
        static = await answer(broker.port, 11, 5, join_request("g2", instance="i" * (longest_fine + 1)))
        assert (static.error_code, static.member_id) == (ErrorCode.UNKNOWN_SERVER_ERROR, "")
        described = await answer(broker.port, 15, 5, DescribeGroups(groups=("g2",)))
        assert described.groups[0].group_state == "Dead"          # nothing was created
        await trio.sleep(1.5)
        assert broker.running() and healthy.kept_its_generation()
        nursery.cancel_scope.cancel()
    assert broker.stop() == 0
    assert log_verify(broker.data_dir).returncode == 0
    assert "UNKNOWN_SERVER_ERROR" in broker.log_text() and "/127.0.0.1" in broker.log_text()


async def test_group_metadata_over_message_max_bytes_is_never_written(start_broker):
    """A 70 MB subscription: the join works (nothing is written yet), the leader's SyncGroup
    cannot be stored (Kafka: RecordTooLargeException -> UNKNOWN_SERVER_ERROR) and the group
    rebalances; after a restart every commit of the healthy group is there."""
    broker = start_broker(SETTINGS)
    healthy = HealthyMember(broker.port)
    async with trio.open_nursery() as nursery:
        await healthy.start(nursery)
        client = await TrioClient.connect(broker.port)
        join = join_request("big", metadata=b"m" * 70_000_000)
        first = await client.call(ApiKey.JOIN_GROUP, 5, join)
        joined = await client.call(ApiKey.JOIN_GROUP, 5, dataclasses.replace(join, member_id=first.member_id))
        assert joined.error_code == ErrorCode.NONE and len(joined.members[0].metadata) == 70_000_000
        sync = SyncGroup(group_id="big", generation_id=joined.generation_id, member_id=joined.member_id,
                         assignments=(SyncGroup.SyncGroupRequestAssignment(
                             member_id=joined.member_id, assignment=b"a"),))
        assert (await client.call(ApiKey.SYNC_GROUP, 3, sync)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        hb = Heartbeat(group_id="big", generation_id=joined.generation_id, member_id=joined.member_id)
        assert (await client.call(ApiKey.HEARTBEAT, 4, hb)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        await client.aclose()
        more = commit_request(HEALTHY, 43, member=healthy.member, generation=healthy.generation)
        assert (await answer(broker.port, 8, 8, more)).topics[0].partitions[0].error_code == 0
        await trio.sleep(1)
        assert healthy.kept_its_generation()
        nursery.cancel_scope.cancel()
    assert broker.stop() == 0
    assert log_verify(broker.data_dir).returncode == 0
    broker.start()
    while (fetched := await answer(broker.port, 9, 6, fetch_request(HEALTHY))).error_code:
        assert fetched.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        await trio.sleep(0.1)
    assert fetched.topics[0].partitions[0].committed_offset == 43


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


async def test_memory_returns_after_a_hundred_requests_with_10_mib_ids(start_broker):
    broker = start_broker(SETTINGS)
    for warm_up in range(3):                       # one of each first: imports, buffers, caches
        await closes_the_connection(broker.port, 11, 9, join_request(f"w{warm_up}" * (5 << 20)))
    before = rss_kib(broker.proc.pid)
    for i in range(100):
        api_key, version, body = [(11, 9, join_request(f"{i}" * (10 << 20))),
                                  (8, 8, commit_request(f"{i}" * (10 << 20), 1)),
                                  (15, 5, DescribeGroups(groups=(f"{i}" * (10 << 20),)))][i % 3]
        assert await closes_the_connection(broker.port, api_key, version, body)
    await trio.sleep(0.5)
    after = rss_kib(broker.proc.pid)
    assert after - before < 50 * 1024, (before, after)
    assert (await answer(broker.port, 9, 6, fetch_request("x"))).error_code == ErrorCode.NONE


@pytest.fixture
def small_disk(tmp_path):
    """A 20 MiB tmpfs as the broker's data dir (where ``start_broker`` puts it)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(data)], check=True)
    yield data
    subprocess.run(["umount", "-l", str(data)], check=True)


def fill(directory) -> str:
    """Write a file until the disk refuses another byte."""
    path = os.path.join(directory, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return path


async def test_a_full_disk_never_stops_the_broker_and_loses_no_acknowledged_commit(start_broker, small_disk):
    broker = start_broker({**SETTINGS, "groupbroker.journal.sample.interval.ms": 200})
    try:
        healthy = HealthyMember(broker.port)
        async with trio.open_nursery() as nursery:
            await healthy.start(nursery)          # creates the topic, too
            nursery.cancel_scope.cancel()
        client = await TrioClient.connect(broker.port)

        async def commit(offset: int) -> ErrorCode:
            return (await client.call(ApiKey.OFFSET_COMMIT, 8, commit_request("simple", offset))).topics[0].partitions[0].error_code

        acknowledged = [offset for offset in range(1, 4) if await commit(offset) == ErrorCode.NONE]
        assert acknowledged == [1, 2, 3]
        filler = fill(small_disk)
        offset = 3
        while (error := await commit(offset := offset + 1)) == ErrorCode.NONE:   # a page may have room
            acknowledged.append(offset)
            assert offset < 1000
        assert error == ErrorCode.NOT_COORDINATOR
        for _ in range(30):                       # errors answered: the journal fills its page
            assert await commit(offset := offset + 1) in (ErrorCode.NOT_COORDINATOR,
                                                          ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            await trio.sleep(0.1)
        await trio.sleep(1.5)                     # the journal's next write fails too
        assert broker.running() and "journal: cannot write" in broker.log_text()
        os.remove(filler)
        started = trio.current_time()
        while (error := await commit(offset := offset + 1)) != ErrorCode.NONE:
            assert trio.current_time() - started < 60, error
            await trio.sleep(0.5)
        acknowledged.append(offset)
        await client.aclose()
        assert broker.stop() == 0
        text = broker.log_text()
        assert text.count("journal: cannot write") == 1 and "serving again" in text
        assert log_verify(broker.data_dir).returncode == 0
        broker.start()
        while (fetched := await answer(broker.port, 9, 6, fetch_request("simple"))).error_code:
            await trio.sleep(0.1)
        assert fetched.topics[0].partitions[0].committed_offset == acknowledged[-1]
        assert broker.stop() == 0
    finally:
        broker.kill()


async def test_fifty_of_the_longest_group_ids_kafka_reads_are_answered_in_kafkas_order(start_broker):
    broker = start_broker(SETTINGS)
    groups = tuple(f"{i:02d}".ljust(0x7FFF, "g") for i in range(50))     # spread over the shards
    described = await answer(broker.port, 15, 5, DescribeGroups(groups=groups))
    while any(g.error_code for g in described.groups):          # the shards are loading
        await trio.sleep(0.1)
        described = await answer(broker.port, 15, 5, DescribeGroups(groups=groups))
    by_shard = {}
    for g in groups:
        by_shard.setdefault(shard_for(g), []).append(g)
    kafkas_order = [g for shard in shard_order([shard_for(g) for g in groups]) for g in by_shard[shard]]
    assert [(g.group_id, g.error_code, g.group_state) for g in described.groups] == \
        [(g, 0, "Dead") for g in kafkas_order]
    fetch = OffsetFetch.OffsetFetchRequestGroup
    fetched = await answer(broker.port, 9, 8, OffsetFetch(groups=tuple(
        fetch(group_id=g, topics=None) for g in groups)))
    assert [(g.group_id, g.error_code) for g in fetched.groups] == [(g, 0) for g in groups]
