"""``groupbroker groups`` run as a subprocess against an in-process broker with a real group."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys

import pytest
import trio
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.api_versions import unsupported_version_answer
from broker.groups_cli import Connection, GroupsError
from protocol import REQUESTS
from protocol.errors import ErrorCode
from protocol.frames import FrameBuffer
from protocol.header import decode_request_header, encode_response
from protocol.messages import DATA, RESPONSES
from protocol.payloads import encode_payload
from wire_client import WireClient

GROUP, TOPIC, CLIENT = "billing", "orders", "cli-test"


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({"group.initial.rebalance.delay.ms": "0",
                               "group.min.session.timeout.ms": "500",
                               "groupbroker.offsets.fsync": "false"})


async def cli(broker, *args) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "broker", "groups", "--bootstrap-server",
           f"127.0.0.1:{broker.port}", *args]
    return await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False)


def out(result) -> list[str]:
    return result.stdout.decode().splitlines()


def err(result) -> str:
    return result.stderr.decode().strip()


def batch(count: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=1_000 + i, key=None, value=b"m%d" % i, headers=[])
    return bytes(builder.build())


async def topic_with_records(client: WireClient) -> None:
    """TOPIC with 2 partitions holding 5 and 3 records."""
    ct = REQUESTS[19].cls
    created = await client.call(19, 5, ct(topics=(ct.CreatableTopic(
        name=TOPIC, num_partitions=2, replication_factor=1, assignments=(), configs=()),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    pr = REQUESTS[0].cls
    data = tuple(pr.TopicProduceData.PartitionProduceData(index=p, records=batch(n)) for p, n in ((0, 5), (1, 3)))
    produced = await client.call(0, 3, pr(acks=-1, timeout_ms=5000, topic_data=(
        pr.TopicProduceData(name=TOPIC, partition_data=data),)))
    assert all(p.error_code == 0 for p in produced.responses[0].partition_responses)


async def join_with_assignment(client: WireClient) -> tuple[str, int]:
    """One consumer-protocol member, assigned TOPIC partition 0 only; (member id, generation)."""
    jg, sg = REQUESTS[11].cls, REQUESTS[14].cls
    subscription = encode_payload(DATA["ConsumerProtocolSubscription"], 0,
                                  DATA["ConsumerProtocolSubscription"].cls(topics=(TOPIC,)))
    join = jg(group_id=GROUP, session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
              protocol_type="consumer",
              protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=subscription),))
    first = await client.call(11, 5, join)
    joined = await client.call(11, 5, dataclasses.replace(join, member_id=first.member_id))
    assert joined.error_code == ErrorCode.NONE
    asg = DATA["ConsumerProtocolAssignment"]
    assignment = encode_payload(asg, 0, asg.cls(assigned_partitions=(
        asg.cls.TopicPartition(topic=TOPIC, partitions=(0,)),)))
    synced = await client.call(14, 3, sg(group_id=GROUP, generation_id=joined.generation_id,
                                         member_id=joined.member_id, assignments=(
        sg.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=assignment),)))
    assert synced.error_code == ErrorCode.NONE
    return joined.member_id, joined.generation_id


async def commit(client: WireClient, member: str, generation: int, offsets: dict[int, int]) -> None:
    oc = REQUESTS[8].cls
    parts = tuple(oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition(partition_index=p, committed_offset=o,
                                                  committed_metadata="") for p, o in offsets.items())
    answer = await client.call(8, 2, oc(group_id=GROUP, generation_id_or_member_epoch=generation,
                                        member_id=member, topics=(
        oc.OffsetCommitRequestTopic(name=TOPIC, partitions=parts),)))
    assert all(p.error_code == 0 for p in answer.topics[0].partitions)


@pytest.fixture
async def stable_group(broker):
    """(client, member id): GROUP Stable with one member on partition 0; offsets 2 and 1 committed."""
    client = await WireClient.connect(broker.port, client_id=CLIENT)
    await topic_with_records(client)
    member, generation = await join_with_assignment(client)
    await commit(client, member, generation, {0: 2, 1: 1})
    yield client, member
    await client.aclose()


async def leave(client: WireClient, member: str) -> None:
    lg = REQUESTS[13].cls
    answer = await client.call(13, 1, lg(group_id=GROUP, member_id=member))
    assert answer.error_code == ErrorCode.NONE


def row(cells: list, widths: list[int]) -> str:
    return " ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()


def offsets_lines(member: str, current: tuple, host: str = "/127.0.0.1") -> list[str]:
    w = [15, 15, 10, 15, 15, 15, max(15, len(member)), 15, 0]
    owner = [member, host, CLIENT] if member != "-" else ["-", "-", "-"]
    return [row(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                 "CONSUMER-ID", "HOST", "CLIENT-ID"], w),
            row([GROUP, TOPIC, 0, current[0], 5, 5 - current[0], *owner], w),
            row([GROUP, TOPIC, 1, current[1], 3, 3 - current[1], "-", "-", "-"], w)]


async def test_list_and_describe_a_stable_group(broker, stable_group):
    _, member = stable_group
    listed = await cli(broker, "list")
    assert (listed.returncode, out(listed)) == (0, [GROUP])
    with_state = await cli(broker, "list", "--state")
    assert out(with_state) == [f"{'GROUP':<15} STATE", f"{GROUP:<15} Stable"]
    assert out(await cli(broker, "list", "--state", "stable")) == out(with_state)
    assert out(await cli(broker, "list", "--state", "Empty")) == [f"{'GROUP':<15} STATE"]

    described = await cli(broker, "describe", GROUP)
    assert (described.returncode, err(described)) == (0, "")
    assert out(described) == offsets_lines(member, (2, 1))

    members = await cli(broker, "describe", GROUP, "--members")
    w = [15, max(15, len(member)), 15, 15, 0]
    assert out(members) == [row(["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"], w),
                            row([GROUP, member, "/127.0.0.1", CLIENT, 1], w)]

    state = await cli(broker, "describe", GROUP, "--state")
    coordinator = f"127.0.0.1:{broker.port}  ({broker.config.node_id})"
    w = [15, max(25, len(coordinator)), 25, 20, 0]
    assert out(state) == [row(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE",
                               "#MEMBERS"], w), row([GROUP, coordinator, "range", "Stable", 1], w)]


async def test_unknown_group_and_unreachable_broker(broker):
    missing = await cli(broker, "describe", "nope")
    assert missing.returncode == 1 and out(missing) == []
    assert err(missing) == "Error: Consumer group 'nope' does not exist."
    assert err(await cli(broker, "describe", "nope", "--state")) == err(missing)
    with trio.socket.socket() as s:        # a port nobody listens on
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = await trio.run_process([sys.executable, "-m", "broker", "groups", "--bootstrap-server",
                                   f"127.0.0.1:{port}", "list"],
                                  capture_stdout=True, capture_stderr=True, check=False)
    assert down.returncode == 1
    assert err(down) == f"Error: cannot connect to 127.0.0.1:{port}: Connection refused"


async def test_delete_refused_while_active_then_done_when_empty(broker, stable_group):
    client, member = stable_group
    refused = await cli(broker, "delete", GROUP)
    assert refused.returncode == 1 and out(refused) == []
    assert err(refused).splitlines() == ["Error: Deletion of some consumer groups failed:",
                                         f"* Group '{GROUP}' could not be deleted due to: NON_EMPTY_GROUP"]
    await leave(client, member)
    deleted = await cli(broker, "delete", GROUP)
    assert deleted.returncode == 0, err(deleted)
    assert out(deleted) == [f"Deletion of requested consumer groups ('{GROUP}') was successful."]
    assert out(await cli(broker, "list")) == []


async def test_reset_offsets_refused_while_stable_then_applied(broker, stable_group):
    client, member = stable_group
    refused = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest")
    assert refused.returncode == 1 and out(refused) == []
    assert err(refused) == (f"Error: Assignments can only be reset if the group '{GROUP}' is "
                            "inactive, but the current state is Stable.")
    await leave(client, member)

    w = [30, 30, 10, 0]
    header = row(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], w)
    before = out(await cli(broker, "describe", GROUP))
    planned = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "1")
    assert out(planned) == [header, row([GROUP, TOPIC, 0, 1], w), row([GROUP, TOPIC, 1, 1], w)]
    assert err(planned).startswith("WARN: No action will be performed as the --execute option is missing")
    dry = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "2", "--dry-run")
    assert out(dry)[1:] == [row([GROUP, TOPIC, 0, 2], w), row([GROUP, TOPIC, 1, 2], w)] and err(dry) == ""
    assert out(await cli(broker, "describe", GROUP)) == before            # neither committed anything
    latest = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-latest", "--execute")
    assert out(latest) == [header, row([GROUP, TOPIC, 0, 5], w), row([GROUP, TOPIC, 1, 3], w)]
    to_offset = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "4", "--execute")
    assert out(to_offset) == [header, row([GROUP, TOPIC, 0, 4], w), row([GROUP, TOPIC, 1, 3], w)]

    described = await cli(broker, "describe", GROUP)
    assert described.returncode == 0
    assert err(described) == f"Consumer group '{GROUP}' has no active members."
    assert out(described) == offsets_lines("-", (4, 3))
    earliest = await cli(broker, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest", "--execute")
    assert out(earliest)[1:] == [row([GROUP, TOPIC, 0, 0], w), row([GROUP, TOPIC, 1, 0], w)]
    assert out(await cli(broker, "describe", GROUP))[1:] == offsets_lines("-", (0, 0))[1:]


def fake_old_broker(listener, seen: list[int]) -> None:
    """Answers ApiVersions like a broker that knows only v0-2 (and ListGroups v0-1)."""
    answer = RESPONSES[18].cls
    conn, _ = listener.accept()
    frames = FrameBuffer()
    with conn:
        for _ in range(2):
            while (frame := frames.next_frame()) is None:
                frames.feed(conn.recv(1 << 16))
            header, _ = decode_request_header(frame)
            seen.append(header.api_version)
            if header.api_version > 2:
                v0 = dataclasses.replace(unsupported_version_answer(), api_keys=(
                    answer.ApiVersion(api_key=18, min_version=0, max_version=2),))
                conn.sendall(encode_response(18, 0, header.correlation_id, v0))
            else:
                conn.sendall(encode_response(18, 2, header.correlation_id, answer(
                    error_code=0, api_keys=(answer.ApiVersion(api_key=18, min_version=0, max_version=2),
                                            answer.ApiVersion(api_key=16, min_version=0, max_version=1)))))


async def test_api_versions_falls_back_to_the_brokers_version():
    listener = socket.create_server(("127.0.0.1", 0))
    seen: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, fake_old_broker, listener, seen)
        conn = await trio.to_thread.run_sync(Connection, "127.0.0.1", listener.getsockname()[1])
    listener.close()
    conn.close()
    assert seen == [REQUESTS[18].max_version, 2]
    assert conn.versions == {18: 2, 16: 1}
    with pytest.raises(GroupsError, match="shares no version of DescribeGroupsRequest"):
        conn.version(15)
