"""How leniently groupbroker and Apache Kafka 4.3.1 read requests: bytes after the body, tagged
fields neither knows in flexible versions (in the header and in the body), null arrays against
empty ones, and requests too short or naming a null where the schema has none (the connection
closes). The hand-made frames go to both brokers; their answers are decoded and compared."""

import dataclasses

import pytest

from protocol.api_keys import ApiKey
from protocol.header import decode_response, encode_request
from protocol.registry import API_TABLE
from protocol.wire import uvarint
from tests.oracle.steps import create_topic, req, sub, unique
from tests.support.differential import Differential

M, DC, DCF, LO = ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_CONFIGS, ApiKey.LIST_OFFSETS
UNKNOWN_TAGS = ((77, b"\x01\x02\x03"), (4000, b""))


def frame(api_key, version, body, correlation, *, trailing=b"", header_tags=(), body_tags=()) -> bytes:
    """A request frame as our client encodes it, then changed: ``trailing`` bytes after the body,
    unknown tagged fields (tag, bytes) in the header's and the body's tagged-field sections."""
    data = encode_request(api_key, version, correlation, body, "oracle")[4:]
    if header_tags:
        at = 8 + 2 + len(b"oracle")           # api key, version, correlation id, client id
        assert data[at] == 0
        data = data[:at] + tagged(header_tags) + data[at + 1:]
    if body_tags:
        assert data[-1] == 0                  # the body's top-level tagged fields come last
        data = data[:-1] + tagged(body_tags)
    data += trailing
    return len(data).to_bytes(4, "big") + data


def tagged(tags) -> bytes:
    return uvarint(len(tags)) + b"".join(uvarint(tag) + uvarint(len(value)) + value for tag, value in tags)


async def compare_raw(oracle, api_key, version, body, what, **changes):
    ours, kafka = await oracle.raw(lambda correlation: frame(api_key, version, body, correlation, **changes))
    assert ours is not None and kafka is not None, f"{what}: a broker closed the connection: {ours!r}, {kafka!r}"
    oracle.compare(api_key, version, decode_response(api_key, version, ours)[1],
                   decode_response(api_key, version, kafka)[1], what=what)


def metadata(name):
    return req(M, topics=(sub(M, "MetadataRequestTopic", name=name),), allow_auto_topic_creation=False)


def flexible(api) -> list[int]:
    spec = API_TABLE[api]
    return [v for v in range(spec.min_version, spec.max_version + 1)
            if spec.first_flexible is not None and v >= spec.first_flexible]


@pytest.mark.parametrize("version", [1, 4, 8, 9, 12, 13])
async def test_bytes_after_the_body(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name)
    body = metadata(name) if version >= 4 else req(M, topics=(sub(M, "MetadataRequestTopic", name=name),))
    await compare_raw(oracle, M, version, body, "Metadata with bytes after it", trailing=b"\x00\x07junk!!")
    await compare_raw(oracle, DCF, 1 if version < 9 else 4, req(DCF, resources=(
        sub(DCF, "DescribeConfigsResource", resource_type=2, resource_name=name, configuration_keys=("retention.ms",)),)),
        "DescribeConfigs with bytes after it", trailing=b"\xff" * 9)


@pytest.mark.parametrize("version", flexible(M))
async def test_unknown_tagged_fields(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name)
    await compare_raw(oracle, M, version, metadata(name), "unknown tags in the header", header_tags=UNKNOWN_TAGS)
    await compare_raw(oracle, M, version, metadata(name), "unknown tags in the body", body_tags=UNKNOWN_TAGS)
    await compare_raw(oracle, DC, 0, req(DC), "DescribeCluster with unknown tags everywhere",
                      header_tags=UNKNOWN_TAGS, body_tags=UNKNOWN_TAGS)
    lo = req(LO, replica_id=-1, topics=(sub(LO, "ListOffsetsTopic", name=name, partitions=(
        sub(LO, "ListOffsetsPartition", partition_index=0, timestamp=-1),)),))
    await compare_raw(oracle, LO, 9, lo, "ListOffsets with unknown tags and trailing bytes",
                      body_tags=UNKNOWN_TAGS, trailing=b"\x01\x02")


async def test_null_and_empty_arrays(oracle, request):
    name = unique(request)
    await create_topic(oracle, name)
    for version in (1, 9, 12):
        ours, kafka = await oracle.both(M, version, req(M, topics=None))
        keep = lambda a: dataclasses.replace(a, topics=tuple(t for t in a.topics if t.name == name))  # noqa: E731
        oracle.compare(M, version, keep(ours), keep(kafka), what="Metadata: null topics, every topic")
        await oracle.call(M, version, req(M, topics=()), what="Metadata: no topics")
    for keys in (None, ()):
        await oracle.call(DCF, 4, req(DCF, resources=(sub(DCF, "DescribeConfigsResource", resource_type=2,
                                                          resource_name=name, configuration_keys=keys),)),
                          what=f"DescribeConfigs with configuration keys {keys}")


@pytest.fixture
async def fresh(kafka_oracle, oracle_twin):
    """A new pair of connections, for requests that end them."""
    pair = await Differential.open(oracle_twin.port, kafka_oracle.port)
    yield pair
    await pair.aclose()


def malformed(case: str, correlation: int) -> bytes:
    if case == "too short":                  # a Metadata v9 body three bytes short
        data = frame(M, 9, metadata("abc"), correlation)[4:-3]
        return len(data).to_bytes(4, "big") + data
    if case == "a null array the schema does not allow":
        # CreateTopics v4 with -1 as its topics' count (the body: count, timeout, validate_only)
        data = frame(ApiKey.CREATE_TOPICS, 4, req(ApiKey.CREATE_TOPICS, topics=(), timeout_ms=1000), correlation)
        return data[:-9] + b"\xff\xff\xff\xff" + data[-5:]
    data = frame(M, 9, metadata("abc"), correlation)      # an unknown version: Metadata v99
    return data[:6] + (99).to_bytes(2, "big") + data[8:]


@pytest.mark.parametrize("case", ["too short", "a null array the schema does not allow", "an unknown version"])
async def test_malformed_requests_close_the_connection(fresh, case):
    ours, kafka = await fresh.raw(lambda correlation: malformed(case, correlation))
    assert (ours, kafka) == (None, None), case
