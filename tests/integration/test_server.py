"""The trio server over real sockets: ApiVersions rules, in-order answers, bad input, shutdown."""

import random
import signal
import socket
import struct
import subprocess
import sys

import pytest
import trio
import trio.testing

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.registry import API_TABLE
from protocol.header import RequestHeader, decode_response, encode_request, encode_response
from tests.support.trio_client import TrioClient
from tests.support.wire import header, join_stable_member

GROUP = "healthy-group"


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({"group.initial.rebalance.delay.ms": "0",
                               "group.min.session.timeout.ms": "500"})


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_api_versions_lists_only_served_apis(broker, version):
    client = await TrioClient.connect(broker.port)
    api = REQUESTS[ApiKey.API_VERSIONS].cls
    body = api(client_software_name="wire-test", client_software_version="1.0") if version >= 3 else api()
    answer = await client.call(ApiKey.API_VERSIONS, version, body)
    assert answer.error_code == ErrorCode.NONE
    keys = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert keys[18] == (0, 4) and keys[11] == (API_TABLE[ApiKey.JOIN_GROUP].min_version, API_TABLE[ApiKey.JOIN_GROUP].max_version)
    assert keys[68] == (0, 1) and keys[69] == (0, 1)  # KIP-848 ConsumerGroupHeartbeat, -Describe
    assert set(keys) == set(broker.handlers.routes)


async def test_unknown_api_versions_version_gets_the_v0_answer(broker):
    client = await TrioClient.connect(broker.port)
    await client.send_raw(struct.pack(">i", 10 + 5) + header(18, 99, 7) + b"\x00junk")
    frame = await client.frame()
    assert struct.unpack_from(">i", frame)[0] == 7
    # v0 body: error 35, then the ApiVersions entry only
    assert frame[4:] == struct.pack(">hihhh", 35, 1, 18, 0, 4)


async def test_bad_software_name_is_invalid_request(broker):
    client = await TrioClient.connect(broker.port)
    api = REQUESTS[ApiKey.API_VERSIONS].cls
    answer = await client.call(ApiKey.API_VERSIONS, 3, api(client_software_name="-bad name", client_software_version="1"))
    assert answer.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", [0, 3, 4, 6])
async def test_find_coordinator_names_this_node(broker, version):
    client = await TrioClient.connect(broker.port)
    fc = REQUESTS[ApiKey.FIND_COORDINATOR].cls
    body = fc(key=GROUP) if version < 4 else fc(coordinator_keys=(GROUP, "other"))
    answer = await client.call(ApiKey.FIND_COORDINATOR, version, body)
    if version < 4:
        assert (answer.error_code, answer.node_id, answer.host, answer.port) == (0, 1, "127.0.0.1", broker.port)
    else:
        assert [(c.key, c.node_id, c.port) for c in answer.coordinators] == \
            [(GROUP, 1, broker.port), ("other", 1, broker.port)]


async def test_answers_keep_request_order_behind_a_parked_join(broker):
    jg = REQUESTS[ApiKey.JOIN_GROUP].cls
    client = await TrioClient.connect(broker.port)
    # JoinGroup v3 (no member id round trip) parks until the join completes; ApiVersions waits behind it
    first = await client.send(ApiKey.JOIN_GROUP, 3, jg(group_id="order", session_timeout_ms=1000, rebalance_timeout_ms=1000,
                                        member_id="", protocol_type="consumer",
                                        protocols=(jg.JoinGroupRequestProtocol(name="range", metadata=b""),)))
    second = await client.send(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())
    assert (await client.receive())[0] == first
    assert (await client.receive())[0] == second


async def test_pipelined_requests_are_decided_in_order_and_answered_in_order(broker):
    """Commits, heartbeats and fetches sent back to back without waiting (one write) go to
    their shards together; each still sees the one before it, and the answers keep order."""
    client = await TrioClient.connect(broker.port)
    ct, oc, of, hb = (REQUESTS[k].cls for k in (19, 8, 9, 12))
    await client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(name="piped", num_partitions=1, replication_factor=1),)))
    topic, part = oc.OffsetCommitRequestTopic, oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition

    def commit(group, offset):
        return oc(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=(
            topic(name="piped", partitions=(part(partition_index=0, committed_offset=offset,
                                                 committed_metadata=""),)),))

    def fetch(group):
        return of(group_id=group, topics=(of.OffsetFetchRequestTopic(name="piped", partition_indexes=(0,)),))

    plan = [(8, 8, commit("piped-a", 5)), (12, 4, hb(group_id="piped-a", generation_id=1, member_id="ghost")),
            (9, 5, fetch("piped-a")), (8, 8, commit("piped-a", 9)), (8, 8, commit("piped-b", 7)),
            (9, 5, fetch("piped-a")), (9, 5, fetch("piped-b"))]
    wire = b"".join(encode_request(key, v, i, body, "t") for i, (key, v, body) in enumerate(plan))
    await client.send_raw(wire)
    answers = [decode_response(key, v, await client.frame()) for key, v, _ in plan]
    assert [correlation for correlation, _ in answers] == list(range(len(plan)))
    assert answers[1][1].error_code == ErrorCode.UNKNOWN_MEMBER_ID
    fetched = [answers[i][1].topics[0].partitions[0].committed_offset for i in (2, 5, 6)]
    assert fetched == [5, 9, 7]


BAD_INPUT = {
    # a well-sized frame of seeded garbage: a random length prefix could leave the broker waiting for more
    "random bytes": struct.pack(">i", 60) + random.Random(7).randbytes(60),
    "truncated frame": struct.pack(">i", 30) + header(12, 4, 1) + b"\x05abc",
    "frame claiming 2 GiB": struct.pack(">i", 2**31 - 1) + b"\x00" * 16,
    "unknown api key": struct.pack(">i", 10) + header(999, 0, 1)[:10],
    "unsupported JoinGroup version": struct.pack(">i", 10) + header(11, 42, 1)[:10],
    "malformed body": struct.pack(">i", 13) + header(12, 3, 1) + b"\xff\xff\xff",
}


async def test_requests_pipelined_before_a_bad_frame_are_answered_first(broker):
    client = await TrioClient.connect(broker.port)
    member, generation = await join_stable_member(client, GROUP)
    hb = REQUESTS[ApiKey.HEARTBEAT].cls(group_id=GROUP, generation_id=generation, member_id=member)
    await client.send_raw(encode_request(12, 4, 41, hb, "t") + BAD_INPUT["malformed body"])
    assert decode_response(ApiKey.HEARTBEAT, 4, await client.frame())[0] == 41
    with trio.fail_after(5):
        assert await client.closed_by_peer()


@pytest.mark.parametrize("name", list(BAD_INPUT))
async def test_bad_input_closes_only_its_connection(broker, name, caplog):
    healthy = await TrioClient.connect(broker.port)
    member, generation = await join_stable_member(healthy, GROUP)
    bad = await TrioClient.connect(broker.port)
    if name == "truncated frame":
        await bad.send_raw(BAD_INPUT[name])
        await bad.stream.send_eof()
    else:
        await bad.send_raw(BAD_INPUT[name])
    with trio.fail_after(5):
        assert await bad.closed_by_peer()
    hb = REQUESTS[ApiKey.HEARTBEAT].cls(group_id=GROUP, generation_id=generation, member_id=member)
    for _ in range(3):                       # the healthy member stays in its stable group
        assert (await healthy.call(ApiKey.HEARTBEAT, 3, hb)).error_code == ErrorCode.NONE
        await trio.sleep(0.3)
    describe = await healthy.call(ApiKey.DESCRIBE_GROUPS, 5, REQUESTS[ApiKey.DESCRIBE_GROUPS].cls(groups=(GROUP,)))
    assert describe.groups[0].group_state == "Stable"
    if name != "truncated frame":
        assert any("closing connection from 127.0.0.1" in r.getMessage() for r in caplog.records)


def test_cli_serve_prints_one_line_and_stops_cleanly_on_sigterm(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "broker", "serve", "--port", "0", "--data-dir",
                             str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("groupbroker listening on 127.0.0.1:")
        port = int(line.strip().rsplit(":", 1)[1])
        assert port > 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == ""                 # exactly one line on stdout
    finally:
        proc.kill()


async def test_commits_to_partitions_that_do_not_exist_get_unknown_topic(broker):
    client = await TrioClient.connect(broker.port)
    ct = REQUESTS[ApiKey.CREATE_TOPICS].cls
    created = await client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(name="known", num_partitions=2,
                                                                     replication_factor=1),)))
    assert created.topics[0].error_code == ErrorCode.NONE
    oc = REQUESTS[ApiKey.OFFSET_COMMIT].cls
    topic, part = oc.OffsetCommitRequestTopic, oc.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    commit = oc(group_id="simple", generation_id_or_member_epoch=-1, member_id="", topics=(
        topic(name="known", partitions=(part(partition_index=0, committed_offset=5, committed_metadata=""),
                                        part(partition_index=2, committed_offset=5, committed_metadata=""))),
        topic(name="missing", partitions=(part(partition_index=0, committed_offset=5, committed_metadata=""),))))
    answer = await client.call(ApiKey.OFFSET_COMMIT, 8, commit)
    # Kafka's order: the API layer's errors first, then the coordinator's results merged in
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in answer.topics] == [
        ("known", [(2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (0, ErrorCode.NONE)]),
        ("missing", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
    of = REQUESTS[ApiKey.OFFSET_FETCH].cls
    fetched = await client.call(ApiKey.OFFSET_FETCH, 6, of(group_id="simple", topics=(
        of.OffsetFetchRequestTopic(name="known", partition_indexes=(0, 2)),)))
    assert [(p.partition_index, p.committed_offset) for p in fetched.topics[0].partitions] == [(0, 5), (2, -1)]


async def test_deleting_a_topic_drops_its_committed_offsets(broker):
    client = await TrioClient.connect(broker.port)
    ct, dt = REQUESTS[ApiKey.CREATE_TOPICS].cls, REQUESTS[ApiKey.DELETE_TOPICS].cls
    oc, of = REQUESTS[ApiKey.OFFSET_COMMIT].cls, REQUESTS[ApiKey.OFFSET_FETCH].cls
    create = ct(topics=(ct.CreatableTopic(name="gone", num_partitions=1, replication_factor=1),))
    assert (await client.call(ApiKey.CREATE_TOPICS, 5, create)).topics[0].error_code == ErrorCode.NONE
    topic = oc.OffsetCommitRequestTopic
    commit = oc(group_id="g-del", generation_id_or_member_epoch=-1, member_id="", topics=(
        topic(name="gone", partitions=(topic.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=9, committed_metadata=""),)),))
    assert (await client.call(ApiKey.OFFSET_COMMIT, 8, commit)).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert (await client.call(ApiKey.DELETE_TOPICS, 4, dt(topic_names=("gone",), timeout_ms=1000))).responses[0].error_code == 0
    assert (await client.call(ApiKey.CREATE_TOPICS, 5, create)).topics[0].error_code == ErrorCode.NONE     # recreated
    fetch = of(group_id="g-del", topics=(of.OffsetFetchRequestTopic(name="gone", partition_indexes=(0,)),))
    with trio.fail_after(5):
        while (await client.call(ApiKey.OFFSET_FETCH, 6, fetch)).topics[0].partitions[0].committed_offset != -1:
            await trio.sleep(0.01)


async def test_a_client_leaving_mid_answer_is_not_an_internal_error(broker, caplog):
    client = await TrioClient.connect(broker.port)
    ct, fetch = REQUESTS[ApiKey.CREATE_TOPICS].cls, REQUESTS[ApiKey.FETCH].cls
    await client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(name="quiet", num_partitions=1,
                                                           replication_factor=1),)))
    topic = fetch.FetchTopic
    await client.send(ApiKey.FETCH, 12, fetch(max_wait_ms=300, min_bytes=1, topics=(topic(topic="quiet", partitions=(
        topic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1024),)),)))
    client.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                    struct.pack("ii", 1, 0))      # close with a reset
    await client.aclose()
    await trio.sleep(0.6)                                         # the long poll answers into nothing
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


async def test_an_answer_whose_write_failed_is_never_sent():
    """Its refusal (the request's NOT_COORDINATOR answer) goes out instead, in its place."""
    from broker.server.sender import Answer, OrderedSender
    from broker.group_runtime.shard_runner import Ticket
    from coordinator.responses import heartbeat
    ours, theirs = (trio.SocketStream(s) for s in trio.socket.socketpair())
    sender = OrderedSender(ours)
    written, failed = Ticket(12, 4, None), Ticket(12, 4, None)
    written.release()
    request = REQUESTS[ApiKey.HEARTBEAT].cls(group_id="g", generation_id=1, member_id="m")
    asked = RequestHeader(ApiKey.HEARTBEAT, 4, 7, "c")
    await sender.submit([Answer([written], [b"sent"], asked, request)])
    assert await theirs.receive_some() == b"sent"
    failed.failed = True
    failed.release()
    await sender.submit([Answer([failed], [b"must not go out"], asked, request),
                         Answer([written], [b"next"], asked, request)])
    await ours.aclose()
    received = b""
    while chunk := await theirs.receive_some():
        received += chunk
    refused = encode_response(ApiKey.HEARTBEAT, 4, 7, heartbeat(ErrorCode.NOT_COORDINATOR))
    assert received == refused + b"next"


async def test_shard_logs_open_in_worker_threads_once_the_broker_serves(nursery, tmp_path):
    """Building a broker reads no offsets log (recovering 50 of them would stall the event
    loop); serving opens them in worker threads, and group requests then work."""
    from broker.config import BrokerConfig
    from broker.server.broker import Broker
    b = Broker(BrokerConfig.build({"group.initial.rebalance.delay.ms": 0,
                                   "group.min.session.timeout.ms": 1000}, port=0,
                                  data_dir=str(tmp_path)))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("__consumer_offsets-")]
    await nursery.start(b.serve)
    await b.ready.wait()
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("__consumer_offsets-")]) == 50
    client = await TrioClient.connect(b.port)
    member, generation = await join_stable_member(client, "opened-in-threads")
    assert generation == 1
    b.stop()


async def test_a_graceful_stop_closes_idle_connections_at_once_and_answers_busy_ones(tmp_path):
    """A client that only holds its connection open costs the stop nothing (it used to wait
    out shutdown_grace_s, 3 s); a JoinGroup still parked when the stop begins is answered."""
    from broker.config import BrokerConfig
    from broker.server.broker import Broker
    b = Broker(BrokerConfig.build({"group.initial.rebalance.delay.ms": 1000}, port=0, data_dir=str(tmp_path)))
    join = REQUESTS[ApiKey.JOIN_GROUP].cls(
        group_id="stopping", session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
        protocol_type="consumer", protocols=(REQUESTS[ApiKey.JOIN_GROUP].cls.JoinGroupRequestProtocol(
            name="range", metadata=b""),))
    joined = []
    async with trio.open_nursery() as nursery:
        await nursery.start(b.serve)
        await b.ready.wait()
        idle = await TrioClient.connect(b.port)
        body = REQUESTS[ApiKey.API_VERSIONS].cls(client_software_name="t", client_software_version="1")
        assert (await idle.call(ApiKey.API_VERSIONS, 3, body)).error_code == ErrorCode.NONE
        busy = await TrioClient.connect(b.port)

        async def parked_join():
            joined.append(await busy.call(ApiKey.JOIN_GROUP, 3, join))   # held for the initial delay
        nursery.start_soon(parked_join)
        await trio.sleep(0.2)
        started = trio.current_time()
        b.stop()
        with trio.fail_after(1):
            assert await idle.closed_by_peer()
    assert 0.5 < trio.current_time() - started < 2.0      # the join's delay, not the 3 s grace
    assert joined[0].error_code == ErrorCode.NONE and joined[0].generation_id == 1
