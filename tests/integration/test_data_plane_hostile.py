"""The data plane and the connections under hostile input, over real sockets: bounded Fetch
answers, parked fetches that cost nothing and end with their connection, idle expiry, running
out of file descriptors, Kafka's answers where we used to raise, and escaped client strings."""

import logging
import os
import resource
import socket
import struct
import uuid

import pytest
import trio

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.records import read_batches
from tests.unit.topic_log.test_batches import batch, values_of
from tests.support.trio_client import TrioClient
from tests.support.wire import header

Fetch, Produce, Metadata = REQUESTS[ApiKey.FETCH].cls, REQUESTS[ApiKey.PRODUCE].cls, REQUESTS[ApiKey.METADATA].cls
CreateTopics, InitProducerId = REQUESTS[ApiKey.CREATE_TOPICS].cls, REQUESTS[ApiKey.INIT_PRODUCER_ID].cls
LONG_POLL_MS = 20_000


@pytest.fixture
async def broker(serve_broker):
    return await serve_broker({"fetch.max.bytes": "1024"})


async def create(client: TrioClient, name: str, partitions: int = 1) -> None:
    answer = await client.call(ApiKey.CREATE_TOPICS, 5, CreateTopics(topics=(CreateTopics.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1),)))
    assert answer.topics[0].error_code == ErrorCode.NONE


async def produce(client: TrioClient, topic: str, partition: int, records: bytes) -> None:
    data = Produce.TopicProduceData
    answer = await client.call(ApiKey.PRODUCE, 9, Produce(acks=-1, timeout_ms=1000, topic_data=(data(
        name=topic, partition_data=(data.PartitionProduceData(index=partition, records=records),)),)))
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def fetch(topic: str, partition: int = 0, *, offset: int = 0, max_wait_ms: int = 0,
          max_bytes: int = 2**31 - 1) -> Fetch:
    t = Fetch.FetchTopic
    return Fetch(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, topics=(t(
        topic=topic, partitions=(t.FetchPartition(partition=partition, fetch_offset=offset,
                                                  partition_max_bytes=max_bytes),)),))


def records_of(answer) -> bytes:
    return answer.responses[0].partitions[0].records


async def until(condition) -> None:
    with trio.fail_after(5):
        while not condition():
            await trio.sleep(0.01)


# --- Fetch answers are bounded by fetch.max.bytes ----------------------------------------------

async def test_a_2gb_fetch_gets_at_most_fetch_max_bytes(broker):
    client = await TrioClient.connect(broker.port)
    await create(client, "bounded")
    for i in range(6):
        await produce(client, "bounded", 0, batch([b"%d" % i * 200]))        # ~270 bytes each
    records = records_of(await client.call(ApiKey.FETCH, 12, fetch("bounded")))
    assert 0 < len(records) <= 1024
    assert len(read_batches(records)) == 3
    assert [o for o, _ in values_of(records)] == [0, 1, 2]


async def test_the_first_batch_comes_whole_even_past_fetch_max_bytes(broker):
    client = await TrioClient.connect(broker.port)
    await create(client, "big-first")
    await produce(client, "big-first", 0, batch([b"x" * 5000]))
    await produce(client, "big-first", 0, batch([b"small"]))
    records = records_of(await client.call(ApiKey.FETCH, 12, fetch("big-first")))
    assert len(records) > 5000
    assert values_of(records) == [(0, b"x" * 5000)]               # and nothing after it


# --- Parked fetches ----------------------------------------------------------------------------

async def test_a_produce_wakes_only_the_fetches_parked_on_its_partition(broker):
    parked = broker.handlers.data.parked
    poller, producer = await TrioClient.connect(broker.port), await TrioClient.connect(broker.port)
    await create(producer, "two", partitions=2)
    correlation = await poller.send(ApiKey.FETCH, 12, fetch("two", 0, max_wait_ms=LONG_POLL_MS))
    await until(lambda: parked.parked == 1)
    await produce(producer, "two", 1, batch([b"elsewhere"]))
    assert (parked.parked, parked.wakeups) == (1, 0)
    await produce(producer, "two", 0, batch([b"here"]))
    with trio.fail_after(5):
        got, answer = await poller.receive()
    assert got == correlation and values_of(records_of(answer)) == [(0, b"here")]
    assert (parked.parked, parked.wakeups) == (0, 1)


async def test_a_parked_fetch_ends_when_its_client_hangs_up(broker):
    parked = broker.handlers.data.parked
    client = await TrioClient.connect(broker.port)
    await create(client, "abandoned", partitions=3)
    t = Fetch.FetchTopic
    await client.send(ApiKey.FETCH, 12, Fetch(max_wait_ms=LONG_POLL_MS, min_bytes=1, max_bytes=1 << 20, topics=(
        t(topic="abandoned", partitions=tuple(t.FetchPartition(partition=p, partition_max_bytes=1 << 20)
                                               for p in range(3))),)))
    await until(lambda: parked.parked == 1)
    await client.aclose()
    await until(lambda: parked.parked == 0)                       # long before the 20 s poll ends


async def test_a_parked_fetch_answers_what_its_client_sends_next_in_order(broker):
    client = await TrioClient.connect(broker.port)
    await create(client, "ordered")
    first = await client.send(ApiKey.FETCH, 12, fetch("ordered", max_wait_ms=300))
    second = await client.send(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())      # read ahead while the fetch waits
    with trio.fail_after(5):
        assert (await client.receive())[0] == first
        assert (await client.receive())[0] == second


# --- connections.max.idle.ms -------------------------------------------------------------------

async def test_idle_connections_are_closed_and_active_ones_kept(serve_broker, caplog):
    caplog.set_level(logging.INFO, logger="groupbroker.server")
    broker = await serve_broker({"connections.max.idle.ms": "400"})
    idle, partial, active = [await TrioClient.connect(broker.port) for _ in range(3)]
    await idle.call(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())
    await partial.send_raw(struct.pack(">i", 100) + header(18, 0, 1))        # a frame never finished
    with trio.fail_after(5):
        for _ in range(12):                                       # 1.2 s of requests 100 ms apart
            await active.call(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())
            await trio.sleep(0.1)
        assert await idle.closed_by_peer() and await partial.closed_by_peer()
    await active.call(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())
    assert sum("connections.max.idle.ms" in m for m in caplog.messages) == 2


# --- Kafka's answers instead of tracebacks -----------------------------------------------------

@pytest.mark.parametrize("version, topic", [(11, Metadata.MetadataRequestTopic(name=None)),
                                            (10, Metadata.MetadataRequestTopic(name="t", topic_id=uuid.UUID(int=7)))])
async def test_metadata_before_v12_asking_by_id_is_an_invalid_request(broker, caplog, version, topic):
    client = await TrioClient.connect(broker.port)
    answer = await client.call(ApiKey.METADATA, version, Metadata(topics=(topic,), allow_auto_topic_creation=True))
    assert [(t.error_code, t.name, t.partitions) for t in answer.topics] == \
        [(ErrorCode.INVALID_REQUEST, topic.name or "", ())]
    assert answer.brokers == ()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    await client.call(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())                  # the connection carries on


async def test_init_producer_id_with_an_exhausted_epoch_gets_a_new_producer_id(broker, caplog):
    client = await TrioClient.connect(broker.port)
    first = await client.call(ApiKey.INIT_PRODUCER_ID, 4, InitProducerId(transactional_id=None, transaction_timeout_ms=-1))
    assert (first.error_code, first.producer_epoch) == (ErrorCode.NONE, 0)
    again = await client.call(ApiKey.INIT_PRODUCER_ID, 4, InitProducerId(transactional_id=None, transaction_timeout_ms=-1,
                                                    producer_id=first.producer_id, producer_epoch=32767))
    assert again.error_code == ErrorCode.NONE
    assert again.producer_id != first.producer_id and again.producer_epoch == 0
    half = await client.call(ApiKey.INIT_PRODUCER_ID, 4, InitProducerId(transactional_id=None, transaction_timeout_ms=-1,
                                                   producer_id=-1, producer_epoch=3))
    assert (half.error_code, half.producer_id, half.producer_epoch) == (ErrorCode.INVALID_REQUEST, -1, -1)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_an_error_quoting_a_long_topic_name_still_fits_its_answer(broker, caplog):
    """A non-flexible Produce answer cannot carry a 32 KiB error message; a message is cut (Kafka's
    answer to an unknown topic has none)."""
    client = await TrioClient.connect(broker.port)
    data = Produce.TopicProduceData
    answer = await client.call(ApiKey.PRODUCE, 8, Produce(acks=-1, timeout_ms=1000, topic_data=(data(
        name="t" * 32_700, partition_data=(data.PartitionProduceData(index=0, records=b"x"),)),)))
    part = answer.responses[0].partition_responses[0]
    assert part.error_code != ErrorCode.NONE and (part.error_message is None or len(part.error_message) <= 1003)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_client_strings_are_escaped_in_the_log(broker, caplog):
    client = await TrioClient.connect(broker.port, client_id="evil\x1b[2J\nforged line")
    await client.call(ApiKey.METADATA, 11, Metadata(topics=(Metadata.MetadataRequestTopic(name=None),)))
    lines = [m for m in caplog.messages if "Metadata v11" in m]
    assert lines and all("evil\\x1b[2J\\nforged line" in m for m in lines)
    assert not any("\x1b" in m or "\nforged" in m for m in caplog.messages)


# --- Out of file descriptors --------------------------------------------------------------------

async def test_out_of_descriptors_refuses_new_connections_at_once_and_serves_old_ones(broker, caplog):
    old = await TrioClient.connect(broker.port)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 16, hard))
    fillers = []
    try:
        while True:
            try:
                fillers.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        os.close(fillers.pop())                                 # room for one client socket
        refused = trio.socket.from_stdlib_socket(socket.create_connection(("127.0.0.1", broker.port)))
        with trio.fail_after(5):
            assert await refused.recv(1) == b""                 # closed at once, not left hanging
        refused.close()
        assert (await old.call(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())).error_code == ErrorCode.NONE
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    fresh = await TrioClient.connect(broker.port)
    assert (await fresh.call(ApiKey.API_VERSIONS, 0, REQUESTS[ApiKey.API_VERSIONS].cls())).error_code == ErrorCode.NONE
    assert any("cannot accept connections" in m for m in caplog.messages)
    assert any("accepting connections again; 1 refused" in m for m in caplog.messages)


def test_every_data_plane_api_has_an_error_answer_at_every_version():
    """A request the data plane fails (a bug of ours, or a storage error) is answered with
    Kafka's whole-request error shape, which must encode at every served version."""
    from broker.api_spec import Runs
    from broker.dispatch.served import API_SPECS, SERVED_APIS, whole_request_error
    from protocol.header import encode_response
    GROUP_APIS = {key for key, spec in API_SPECS.items() if spec.runs is Runs.GROUP_COORDINATOR}
    for key in sorted(SERVED_APIS - set(GROUP_APIS) - {18}):
        request = REQUESTS[key]
        for version in range(request.min_version, request.max_version + 1):
            answer = whole_request_error(key, version, request.cls(), ErrorCode.UNKNOWN_SERVER_ERROR, "failed")
            assert encode_response(key, version, 1, answer)
