"""Framing, header versions and record-batch headers, checked byte by byte and against kafka-python."""

import re
import struct

import pytest
from crc32c import crc32c

from protocol.api_keys import ApiKey
from protocol.exceptions import DecodeError, FrameTooLarge, UnsupportedVersion
from protocol.frames import FrameBuffer
from protocol.header import (decode_request, decode_request_header, decode_response, encode_request,
                             encode_response)
from protocol.messages import REQUESTS, RESPONSES
from protocol.records import HEADER, batch_crc, read_batches, with_base_offset

HEARTBEAT = 12


def heartbeat(**kw):
    return REQUESTS[HEARTBEAT].cls(group_id="g", generation_id=3, member_id="m", **kw)


# --- framing ---------------------------------------------------------------------------

def test_frames_split_across_arbitrary_chunks():
    frames = [encode_request(HEARTBEAT, v, i, heartbeat()) for i, v in enumerate((0, 3, 4))]
    stream = b"".join(frames)
    buf = FrameBuffer()
    got = []
    for i in range(0, len(stream), 3):
        buf.feed(stream[i:i + 3])
        while (frame := buf.next_frame()) is not None:
            got.append(frame)
    assert got == [f[4:] for f in frames]
    assert buf.pending == 0


def test_oversized_frame_is_refused_before_its_payload_arrives():
    buf = FrameBuffer(max_frame=1024)
    buf.feed(struct.pack(">i", 1025))
    with pytest.raises(FrameTooLarge):
        buf.next_frame()


def test_negative_frame_size_is_a_decode_error():
    buf = FrameBuffer()
    buf.feed(struct.pack(">i", -2))
    with pytest.raises(DecodeError):
        buf.next_frame()


@pytest.mark.parametrize("opening,said", [
    (bytes.fromhex("1603010200010001fc0303"), "TLS handshake on a PLAINTEXT listener"),
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP request (GET) on a Kafka listener"),
    (b"POST /v1 HTTP/1.1\r\n", "HTTP request (POST) on a Kafka listener"),
    (b"PRI * HTTP/2.0\r\n", "HTTP request (PRI) on a Kafka listener"),
])
def test_other_protocols_are_named_not_read_as_giant_frames(opening, said):
    buf = FrameBuffer()
    buf.feed(opening)
    with pytest.raises(DecodeError, match=re.escape(said)):
        buf.next_frame()


# --- headers -----------------------------------------------------------------------------

def test_non_flexible_request_uses_header_v1():
    frame = encode_request(HEARTBEAT, 3, 77, heartbeat(), client_id="cli")[4:]
    assert frame[:13] == struct.pack(">hhih", HEARTBEAT, 3, 77, 3) + b"cli"
    req = decode_request(frame)
    assert req.header.client_id == "cli" and req.header.correlation_id == 77
    assert req.body == heartbeat()


def test_flexible_request_uses_header_v2_with_skipped_unknown_tags():
    frame = encode_request(HEARTBEAT, 4, 5, heartbeat(), client_id=None)[4:]
    # header v2: fixed part, null client id (INT16 -1, not compact), then tagged fields
    assert frame[:11] == struct.pack(">hhih", HEARTBEAT, 4, 5, -1) + b"\x00"
    tagged = frame[:10] + b"\x01\x05\x02ab" + frame[11:]
    req = decode_request(tagged)
    assert req.header.client_id is None and req.body == heartbeat()


def test_null_and_empty_client_id_differ():
    assert decode_request(encode_request(HEARTBEAT, 1, 1, heartbeat(), client_id="")[4:]).header.client_id == ""
    assert decode_request(encode_request(HEARTBEAT, 1, 1, heartbeat(), client_id=None)[4:]).header.client_id is None


@pytest.mark.parametrize("version", [0, 3, 4])
def test_response_header_version_follows_flexibility(version):
    body = RESPONSES[HEARTBEAT].cls(throttle_time_ms=0 if version == 0 else 9, error_code=27)
    frame = encode_response(HEARTBEAT, version, 42, body)
    size, corr = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4 and corr == 42
    header_len = 5 if version >= 4 else 4
    assert frame[4 + header_len:] == RESPONSES[HEARTBEAT].codec(version).encode(body)
    assert decode_response(HEARTBEAT, version, frame[4:]) == (42, body)


def test_api_versions_response_header_is_always_v0():
    from kafka.protocol.metadata import ApiVersionsResponse as KResp
    api_versions = RESPONSES[ApiKey.API_VERSIONS]
    body = api_versions.cls(error_code=0, api_keys=(api_versions.cls.ApiVersion(api_key=12, min_version=0,
                                                                                max_version=4),))
    frame = encode_response(18, 3, 9, body)
    assert struct.unpack_from(">i", frame, 4)[0] == 9
    # no tagged-field byte after the correlation id: the body starts right away
    assert frame[8:] == api_versions.codec(3).encode(body)
    decoded = KResp.decode(frame[8:], version=3)
    assert decoded.api_keys[0].max_version == 4


def test_unknown_api_key_and_version_are_refused_with_the_header():
    frame = struct.pack(">hhih", 9999, 0, 1, -1)
    with pytest.raises(UnsupportedVersion) as e:
        decode_request(frame)
    assert e.value.header.api_key == 9999
    frame = struct.pack(">hhih", 18, 99, 1, -1) + b"\x00junk"
    with pytest.raises(UnsupportedVersion) as e:
        decode_request(frame)
    assert e.value.header.api_version == 99 and e.value.header.correlation_id == 1


@pytest.mark.parametrize("frame", [b"", b"\x00\x0c\x00", struct.pack(">hhih", 12, 1, 1, 50) + b"x"])
def test_truncated_headers_are_decode_errors(frame):
    with pytest.raises(DecodeError):
        decode_request_header(frame)


def test_kafka_python_request_frames_decode():
    from kafka.protocol.consumer.group import HeartbeatRequest as KReq
    for version in (0, 1, 3, 4):
        k = KReq[version](group_id="grp", generation_id=8, member_id="mem",
                          **({"group_instance_id": "inst"} if version >= 3 else {}))
        k.with_header(correlation_id=31, client_id="kp")
        req = decode_request(bytes(k.encode(header=True)))
        assert req.header == req.header.__class__(HEARTBEAT, version, 31, "kp")
        assert req.body.member_id == "mem" and req.body.generation_id == 8
        assert req.body.group_instance_id == ("inst" if version >= 3 else None)


# --- record batches ----------------------------------------------------------------------

def make_batch(records=b"payload", count=1, base_offset=0):
    body = struct.pack(">hiqqqhii", 0, count - 1, 1000, 1000, -1, -1, -1, count) + records
    length = 4 + 1 + 4 + len(body)
    head = struct.pack(">qiib", base_offset, length, 0, 2)
    return head + struct.pack(">I", crc32c(body)) + body


def test_batch_headers_are_read_and_crc_checked():
    data = make_batch(count=3) + make_batch(b"other", count=2)
    a, b = read_batches(data)
    assert (a.record_count, b.record_count) == (3, 2)
    assert b.position == a.size and a.size + b.size == len(data)
    assert a.crc == batch_crc(data[:a.size])


def test_rewriting_base_offset_keeps_crc_valid():
    batch = with_base_offset(make_batch(), 12345)
    header, = read_batches(batch)
    assert header.base_offset == 12345


@pytest.mark.parametrize("damage", ["crc", "truncate", "magic", "length"])
def test_damaged_batches_are_refused(damage):
    batch = bytearray(make_batch())
    if damage == "crc":
        batch[-1] ^= 0xFF
    elif damage == "truncate":
        batch = batch[:-1]
    elif damage == "magic":
        batch[16] = 1
    else:
        batch[8:12] = struct.pack(">i", 3)
    with pytest.raises(DecodeError):
        read_batches(bytes(batch))


def test_header_size_is_kafkas():
    assert HEADER.size == 61


def test_get_telemetry_subscriptions_takes_the_unsupported_path():
    """librdkafka may send GetTelemetrySubscriptions (key 71, v0); we do not serve it."""
    frame = struct.pack(">hhih", 71, 0, 12, 7) + b"rdkafka" + b"\x00" + b"\x00" * 17
    with pytest.raises(UnsupportedVersion) as e:
        decode_request(frame)
    assert (e.value.header.api_key, e.value.header.correlation_id, e.value.header.client_id) == \
        (71, 12, "rdkafka")


# --- bytes after the last field ------------------------------------------------------------

_EVERY_REQUEST = [(key, v) for key, msg in sorted(REQUESTS.items())
                  for v in range(msg.min_version, msg.max_version + 1)]


@pytest.mark.parametrize("key,version", _EVERY_REQUEST)
def test_requests_ignore_bytes_after_the_last_field_as_kafka_does(key, version):
    """Kafka's request parser never checks for leftovers; librdkafka 2.12-2.16 sends three zero
    bytes after its all-topics Metadata request and depends on that."""
    body = REQUESTS[key].cls()
    frame = encode_request(key, version, 5, body)[4:]
    assert decode_request(frame + b"\x00\x00\x00").body == decode_request(frame).body == body
    with pytest.raises(DecodeError):            # truncation is still an error
        decode_request(frame[:-1] if frame[-1:] else frame[:-2])


def test_librdkafka_all_topics_metadata_with_stray_bytes_decodes():
    frame = encode_request(3, 12, 9, REQUESTS[ApiKey.METADATA].cls(topics=None), client_id="rdkafka")[4:]
    request = decode_request(frame + b"\x00\x00\x00")
    assert request.body.topics is None and request.header.client_id == "rdkafka"


def test_responses_stay_strict_and_say_what_is_left():
    response = RESPONSES[HEARTBEAT].cls(error_code=0)
    frame = encode_response(HEARTBEAT, 4, 3, response)[4:]
    assert decode_response(HEARTBEAT, 4, frame) == (3, response)
    with pytest.raises(DecodeError, match="2 bytes left after the last field"):
        decode_response(HEARTBEAT, 4, frame + b"\x00\x00")
