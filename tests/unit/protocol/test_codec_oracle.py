"""kafka-python 3.0.12's protocol package as an independent oracle for our codecs.

kafka-python generates its codecs from Kafka's own JSON message definitions, so
for every (message, version) both sides know:

* kafka-python builds the message from our generated value and encodes it;
  we must decode exactly our value, and our encoding must be byte-identical;
* we encode; kafka-python must decode every byte of it to the same values.

Values come from ``strategies.values_for(..., non_default=True)``, so every
field present at the version differs from its default and must travel.

kafka-python differences the bridge normalises: arrays are lists (ours
tuples), bytes may be memoryviews, a zero uuid decodes as None, absent
tagged structs decode as None, the ``*_authorized_operations`` int32 fields of
MetadataResponse / DescribeGroupsResponse / DescribeClusterResponse are
renamed ``authorized_operations`` and typed as a set of bit numbers
("bitfield", {31} being None). Data payloads (ConsumerProtocolSubscription /
Assignment) are encoded by kafka-python with a leading int16 version unless
``header=False``; our codec covers the body only, so the bridge passes
``header=False``. ApiVersionsResponse.decode in kafka-python re-decodes the
body as v0 when error_code != 0; the bridge calls the generated struct decoder
directly, which also lets it check that every byte was consumed.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import pkgutil
import uuid

import kafka.protocol
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.api_data import ApiData
from kafka.protocol.api_message import ApiMessage

from protocol.api_keys import ApiKey
from protocol.exceptions import DecodeError, EncodeError
from protocol.messages import REQUESTS, RESPONSES
from tests.support.strategies import (ZERO_UUID, all_cases, case_id, is_nullable, is_present, struct_class,
                                      values_for)


# --- kafka-python's classes by Kafka message name ----------------------------------------

def _kafka_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in info.name or info.name.endswith("generate_stubs"):
            continue            # the pre-3.0 hand-written classes, and a dev tool
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, (ApiMessage, ApiData))
                    and value not in (ApiMessage, ApiData)
                    and isinstance(getattr(value, "_json", None), dict)):
                found.setdefault(value._json["name"], value)
    return found


KAFKA = _kafka_classes()


def _parse_versions(spec: str) -> tuple[int, int]:
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def _kafka_knows(msg, version: int) -> bool:
    """kafka-python has the message, and Kafka's JSON it ships lists the version."""
    k = KAFKA.get(msg.name)
    if k is None:
        return False
    lo, hi = _parse_versions(k._json["validVersions"])
    return lo <= version <= hi


ORACLE_CASES = [c for c in all_cases() if _kafka_knows(*c)]


# --- bridging values -------------------------------------------------------------------

def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _kafka_field(msg, f, kfields, version):
    """kafka-python's field for our ``f``: same name up to underscores, or a suffix of it
    (kafka-python renames ``*_authorized_operations`` to ``authorized_operations``)."""
    present = [kf for kf in kfields if kf.for_version_q(version)]
    exact = [kf for kf in present if _norm(kf.name) == _norm(f.name)]
    if exact:
        return exact[0]
    suffix = [kf for kf in present if _norm(f.name).endswith(_norm(kf.name))]
    assert len(suffix) == 1, (f"{msg.name} v{version}: field {f.name} present in our declaration "
                              f"but not in kafka-python's ({[kf.name for kf in present]})")
    return suffix[0]


def _check_same_fields(msg, fields, kfields, version, where):
    ours = sorted(_norm(f.name) for f in fields if is_present(msg, f, version))
    theirs = [kf for kf in kfields if kf.for_version_q(version)]
    assert len(ours) == len(theirs), (
        f"{where} v{version}: we have fields {ours}, kafka-python has "
        f"{sorted(_norm(kf.name) for kf in theirs)}")


def _is_bitfield(kf) -> bool:
    return kf.type_str == "bitfield"


def _int32_to_bits(value: int):
    if value == -(2**31):
        return None                     # kafka-python's spelling of the bare sign bit {31}
    u = value & 0xFFFFFFFF
    return {i for i in range(32) if u >> i & 1}


def _bits_to_int32(bits) -> int:
    if bits is None:
        return -(2**31)
    u = sum(1 << i for i in bits)
    return u - (1 << 32) if u >= 1 << 31 else u


def to_kafka(msg, cls, fields, value, kfields, version, where) -> dict:
    """Keyword arguments building kafka-python's counterpart of struct ``value``."""
    _check_same_fields(msg, fields, kfields, version, where)
    out = {}
    for f in fields:
        if not is_present(msg, f, version):
            continue
        kf = _kafka_field(msg, f, kfields, version)
        v = getattr(value, f.name)
        if f.is_struct:
            sub_cls, sub_fields = struct_class(cls, f), msg.struct_fields(f)

            def build(item, kf=kf, sub_cls=sub_cls, sub_fields=sub_fields):
                return kf.data_class(**to_kafka(msg, sub_cls, sub_fields, item, list(kf.fields.values()),
                                                version, f"{where}.{f.name}"))
            if v is None:
                out[kf.name] = None
            elif f.type.startswith("[]"):
                out[kf.name] = [build(item) for item in v]
            else:
                out[kf.name] = build(v)
        elif _is_bitfield(kf):
            out[kf.name] = _int32_to_bits(v)
        elif isinstance(v, tuple):
            out[kf.name] = list(v)
        else:
            out[kf.name] = v
    return out


def from_kafka(msg, cls, fields, kobj, kfields, version):
    """Our dataclass holding what kafka-python decoded (absent fields keep defaults)."""
    assert not getattr(kobj, "unknown_tags", None), f"kafka-python saw unknown tags {kobj.unknown_tags}"
    values = {}
    for f in fields:
        if not is_present(msg, f, version):
            continue
        kf = _kafka_field(msg, f, kfields, version)
        v = getattr(kobj, kf.name)
        if f.is_struct:
            sub_cls, sub_fields = struct_class(cls, f), msg.struct_fields(f)
            if v is None:
                # kafka-python leaves an absent tagged struct as None; Kafka means the default
                values[f.name] = None if f.type.startswith("[]") or is_nullable(f, version) \
                    else cls.__dataclass_fields__[f.name].default
            elif f.type.startswith("[]"):
                values[f.name] = tuple(from_kafka(msg, sub_cls, sub_fields, item, list(kf.fields.values()), version)
                                       for item in v)
            else:
                values[f.name] = from_kafka(msg, sub_cls, sub_fields, v, list(kf.fields.values()), version)
        elif _is_bitfield(kf):
            values[f.name] = _bits_to_int32(v)
        elif f.element_type == "uuid":
            fix = lambda u: ZERO_UUID if u is None else u
            values[f.name] = None if v is None else (
                tuple(fix(u) for u in v) if f.type.startswith("[]") else fix(v))
        elif f.element_type in ("bytes", "records"):
            fix = lambda b: None if b is None else bytes(b)
            values[f.name] = None if v is None else (
                tuple(fix(b) for b in v) if f.type.startswith("[]") else fix(v))
        elif isinstance(v, list):
            values[f.name] = tuple(v)
        else:
            values[f.name] = v
    return cls(**values)


def kafka_encode(msg, version, value) -> bytes:
    k = KAFKA[msg.name]
    kwargs = to_kafka(msg, msg.cls, msg.fields, value, list(k._struct.fields.values()), version, msg.name)
    if issubclass(k, ApiData):
        return bytes(k(version=version, **kwargs).encode(version=version, header=False))
    return bytes(k[version](**kwargs).encode(version=version))


def kafka_decode(msg, version, data: bytes):
    k = KAFKA[msg.name]
    flexible = k.flexible_version_q(version)
    if issubclass(k, ApiData):
        stream = io.BytesIO(data)
        kobj = k._struct.decode(stream, version=version, compact=flexible, tagged=flexible)
        end = stream.tell()
    else:
        decode = k._struct.compiled_decode_from(version, compact=flexible, tagged=flexible,
                                                data_class=k[None])
        kobj, end = decode(memoryview(data), 0)
    assert end == len(data), f"kafka-python consumed {end} of {len(data)} bytes"
    return from_kafka(msg, msg.cls, msg.fields, kobj, list(k._struct.fields.values()), version)


# --- the oracle ------------------------------------------------------------------------

@pytest.mark.parametrize("case", ORACLE_CASES, ids=case_id)
@settings(max_examples=10, deadline=None, report_multiple_bugs=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_kafka_python_agrees(case, data):
    msg, version = case
    value = data.draw(values_for(msg, version, non_default=True), label="value")
    codec = msg.codec(version)

    theirs = kafka_encode(msg, version, value)
    assert codec.decode(theirs) == value                    # (a) kafka-python -> us
    assert codec.decode_interpreted(theirs) == value

    ours = codec.encode(value)
    assert kafka_decode(msg, version, ours) == value        # (b) us -> kafka-python
    assert ours == theirs                                   # and byte for byte


# Versions real clients send (request and response of each must be oracle-covered).
CLIENT_VERSIONS = {
    "kafka-python 3.0.12": {18: [4, 2], 3: [13], 10: [3], 11: [5], 14: [3], 12: [4], 13: [2],
                            9: [6], 8: [8], 2: [7], 1: [12], 0: [9], 22: [4]},
    "kafka-python 2.0.2": {18: [0], 3: [0, 1], 10: [0], 11: [2], 14: [1], 12: [1], 13: [1],
                           9: [1], 8: [2], 2: [1], 1: [4], 0: [7]},
    "aiokafka 0.14": {3: [5], 10: [1], 11: [5], 14: [3], 9: [3], 8: [3], 12: [1], 13: [1],
                      2: [3], 1: [11], 0: [7]},
    "librdkafka 2.16": {18: [3], 3: [13], 10: [2], 11: [5], 14: [3], 12: [3], 9: [6], 8: [9],
                        2: [7], 1: [16], 0: [10]},       # + ConsumerGroupHeartbeat v1, below
}


def test_oracle_covers_client_versions():
    covered = {(msg.name, v) for msg, v in ORACLE_CASES}
    missing = []
    for client, apis in CLIENT_VERSIONS.items():
        for key, versions in apis.items():
            for v in versions:
                for table, kind in ((REQUESTS, "request"), (RESPONSES, "response")):
                    msg = table.get(key)
                    if msg is None or (msg.name, v) not in covered:
                        name = msg.name if msg else f"api {key} {kind}"
                        missing.append(f"{client}: {name} v{v}")
    assert not missing, "not covered by the kafka-python oracle:\n" + "\n".join(sorted(set(missing)))


# --- header-independent facts, byte for byte --------------------------------------------

def _both_decode(codec, data):
    a, b = codec.decode(data), codec.decode_interpreted(data)
    assert a == b
    return a


def _both_encode(codec, obj):
    a, b = codec.encode(obj), codec.encode_interpreted(obj)
    assert a == b
    return a


@pytest.mark.parametrize("version, group_instance_id, tail", [
    (3, None, b"\xff\xff"),
    (3, "", b"\x00\x00"),
    (3, "é", b"\x00\x02\xc3\xa9"),
    (4, None, b"\x00\x00"),          # compact null, then the empty tagged-field section
    (4, "", b"\x01\x00"),
    (4, "é", b"\x03\xc3\xa9\x00"),
])
def test_nullable_string_null_vs_empty(version, group_instance_id, tail):
    msg = REQUESTS[ApiKey.HEARTBEAT]
    obj = msg.cls(group_id="g", generation_id=5, member_id="m", group_instance_id=group_instance_id)
    head = (b"\x00\x01g\x00\x00\x00\x05\x00\x01m" if version < 4
            else b"\x02g\x00\x00\x00\x05\x02m")
    codec = msg.codec(version)
    assert _both_encode(codec, obj) == head + tail
    decoded = _both_decode(codec, head + tail)
    assert decoded == obj and decoded.group_instance_id == group_instance_id
    assert type(decoded.group_instance_id) is type(group_instance_id)


@pytest.mark.parametrize("version, topics, wire", [
    (1, None, b"\xff\xff\xff\xff"),
    (1, (), b"\x00\x00\x00\x00"),
    (9, None, b"\x00" + b"\x01\x00\x00" + b"\x00"),   # topics, 3 bools, tagged fields
    (9, (), b"\x01" + b"\x01\x00\x00" + b"\x00"),
])
def test_nullable_array_null_vs_empty(version, topics, wire):
    msg = REQUESTS[ApiKey.METADATA]
    obj = msg.cls(topics=topics)
    codec = msg.codec(version)
    assert _both_encode(codec, obj) == wire
    decoded = _both_decode(codec, wire)
    assert decoded == obj and decoded.topics == topics and type(decoded.topics) is type(topics)


def test_non_nullable_string_and_array_refuse_null():
    hb = REQUESTS[ApiKey.HEARTBEAT].codec(3)
    for decode in (hb.decode, hb.decode_interpreted):
        with pytest.raises(DecodeError):
            decode(b"\xff\xff\x00\x00\x00\x05\x00\x01m\xff\xff")     # null group_id
    with pytest.raises(EncodeError):
        hb.encode(REQUESTS[ApiKey.HEARTBEAT].cls(group_id=None))
    with pytest.raises(EncodeError):
        hb.encode_interpreted(REQUESTS[ApiKey.HEARTBEAT].cls(group_id=None))
    md = REQUESTS[ApiKey.METADATA].codec(0)                                          # topics nullable from v1
    for decode in (md.decode, md.decode_interpreted):
        with pytest.raises(DecodeError):
            decode(b"\xff\xff\xff\xff")
    with pytest.raises(EncodeError):
        md.encode(REQUESTS[ApiKey.METADATA].cls(topics=None))
    with pytest.raises(EncodeError):
        md.encode_interpreted(REQUESTS[ApiKey.METADATA].cls(topics=None))


def test_unknown_tagged_field_is_skipped():
    msg = REQUESTS[ApiKey.HEARTBEAT]
    obj = msg.cls(group_id="grp", generation_id=7, member_id="mem", group_instance_id="inst")
    codec = msg.codec(4)
    plain = codec.encode(obj)
    assert plain[-1:] == b"\x00"
    tagged = plain[:-1] + b"\x01" + b"\x07" + b"\x03" + b"abc"
    assert _both_decode(codec, tagged) == obj
    # two unknown tags in ascending order, one with a 2-byte varint size
    big = plain[:-1] + b"\x02" + b"\x07\x00" + b"\x09\x80\x01" + bytes(128)
    assert _both_decode(codec, big) == obj
    # a size running past the frame is refused in both modes
    for decode in (codec.decode, codec.decode_interpreted):
        with pytest.raises(DecodeError):
            decode(plain[:-1] + b"\x01\x07\x04abc")


def test_unknown_tagged_field_in_nested_struct_is_skipped():
    msg = REQUESTS[ApiKey.JOIN_GROUP]
    proto = msg.cls.JoinGroupRequestProtocol(name="n", metadata=b"x")
    obj = msg.cls(group_id="g", session_timeout_ms=1, rebalance_timeout_ms=2, member_id="m",
                  group_instance_id=None, protocol_type="c", protocols=(proto,))
    codec = msg.codec(6)
    wire = codec.encode(obj)
    assert wire.endswith(b"\x02n\x02x\x00\x00")      # element tags, then top-level tags
    tagged = wire[:-2] + b"\x01\x05\x01\xff" + b"\x00"
    assert _both_decode(codec, tagged) == obj


# --- lengths whose varint / int16 prefixes change size, checked against kafka-python ---

@pytest.mark.parametrize("version", [5, 6])                  # classic, flexible
@pytest.mark.parametrize("n", [0, 1, 126, 127, 128, 255, 16383, 16384])
def test_length_prefix_boundaries_agree_with_kafka_python(version, n):
    msg = REQUESTS[ApiKey.JOIN_GROUP]
    proto = msg.cls.JoinGroupRequestProtocol
    protocols = tuple(proto(name=f"p{i}", metadata=b"") for i in range(min(n, 300)))
    obj = msg.cls(group_id="g" * n, session_timeout_ms=1, rebalance_timeout_ms=2,
                  member_id="é" * (n // 2), group_instance_id="i" * n, protocol_type="",
                  protocols=protocols + (proto(name="big", metadata=bytes(range(256)) * (n // 256)
                                               + b"\x01" * (n % 256)),))
    codec = msg.codec(version)
    ours = _both_encode(codec, obj)
    assert ours == kafka_encode(msg, version, obj)
    assert _both_decode(codec, ours) == obj
    assert kafka_decode(msg, version, ours) == obj


def test_classic_string_longer_than_int16_is_refused():
    msg = REQUESTS[ApiKey.HEARTBEAT]
    ok = msg.cls(group_id="g" * 32767)
    assert _both_decode(msg.codec(3), _both_encode(msg.codec(3), ok)) == ok
    too_long = msg.cls(group_id="g" * 32768)
    for mode in (msg.codec(3).encode, msg.codec(3).encode_interpreted):
        with pytest.raises(EncodeError):
            mode(too_long)
    # A compact length could say more, but Kafka's generated readers refuse it all the same.
    long_compact = _both_encode(msg.codec(4), msg.cls(group_id="g" * 32768))
    for mode in (msg.codec(4).decode, msg.codec(4).decode_interpreted):
        with pytest.raises(DecodeError):
            mode(long_compact)


# --- ConsumerGroupHeartbeat: not in kafka-python; round trip + hand-checked bytes -------

def _cgh(kind):
    table = REQUESTS if kind == "request" else RESPONSES
    assert 68 in table, f"ConsumerGroupHeartbeat {kind} is not declared"
    msg = table[68]
    assert msg.min_version <= 1 <= msg.max_version, "librdkafka 2.16 sends ConsumerGroupHeartbeat v1"
    return msg


U1 = uuid.UUID("0123456789abcdef0123456789abcdef")


@pytest.mark.parametrize("kind", ["request", "response"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_consumer_group_heartbeat_round_trip(kind, data):
    msg = _cgh(kind)
    for v in (0, 1):
        if not msg.min_version <= v <= msg.max_version:
            continue
        value = data.draw(values_for(msg, v, non_default=data.draw(st.booleans())), label=f"v{v}")
        codec = msg.codec(v)
        wire = _both_encode(codec, value)
        assert _both_decode(codec, wire) == value


def test_consumer_group_heartbeat_request_v1_bytes():
    msg = _cgh("request")
    cls = msg.cls
    tp = struct_class(cls, next(f for f in msg.fields if f.name == "topic_partitions"))
    obj = cls(group_id="grp", member_id="m1", member_epoch=3, instance_id=None, rack_id="r",
              rebalance_timeout_ms=300000, subscribed_topic_names=("t1", "é"),
              subscribed_topic_regex="^x.*", server_assignor=None,
              topic_partitions=(tp(topic_id=U1, partitions=(0, 2)),))
    wire = (b"\x04grp"                       # group_id: compact string, length+1
            b"\x03m1"                        # member_id
            b"\x00\x00\x00\x03"              # member_epoch
            b"\x00"                          # instance_id: compact null
            b"\x02r"                         # rack_id
            b"\x00\x04\x93\xe0"              # rebalance_timeout_ms = 300000
            b"\x03" b"\x03t1" b"\x03\xc3\xa9"  # subscribed_topic_names: 2 compact strings
            b"\x05^x.*"                      # subscribed_topic_regex (v1+)
            b"\x00"                          # server_assignor: null
            b"\x02"                          # topic_partitions: 1 element
            + U1.bytes +                     #   topic_id
            b"\x03\x00\x00\x00\x00\x00\x00\x00\x02"  # partitions [0, 2]
            b"\x00"                          #   element's tagged fields
            b"\x00")                         # tagged fields
    codec = msg.codec(1)
    assert _both_encode(codec, obj) == wire
    assert _both_decode(codec, wire) == obj
    # v0 has no subscribed_topic_regex: same bytes without it, and a regex is refused
    if msg.min_version == 0:
        v0 = wire.replace(b"\x05^x.*", b"")
        obj0 = dataclasses.replace(obj, subscribed_topic_regex=None)
        assert _both_encode(msg.codec(0), obj0) == v0
        assert _both_decode(msg.codec(0), v0) == obj0


def test_consumer_group_heartbeat_response_v1_bytes():
    msg = _cgh("response")
    cls = msg.cls
    assignment_f = next(f for f in msg.fields if f.name == "assignment")
    assignment = struct_class(cls, assignment_f)
    tp_f = next(f for f in msg.struct_fields(assignment_f) if f.name == "topic_partitions")
    tp = struct_class(assignment, tp_f)
    base = dict(throttle_time_ms=1, error_code=0, error_message=None, member_id="m1",
                member_epoch=4, heartbeat_interval_ms=5000)
    head = (b"\x00\x00\x00\x01" b"\x00\x00" b"\x00" b"\x03m1" b"\x00\x00\x00\x04"
            b"\x00\x00\x13\x88")
    codec = msg.codec(1)
    cases = [
        (cls(**base, assignment=None), head + b"\xff" + b"\x00"),
        (cls(**base, assignment=assignment(topic_partitions=())),
         head + b"\x01" + b"\x01\x00" + b"\x00"),
        (cls(**base, assignment=assignment(topic_partitions=(tp(topic_id=U1, partitions=(7,)),))),
         head + b"\x01" + b"\x02" + U1.bytes + b"\x02\x00\x00\x00\x07\x00" + b"\x00" + b"\x00"),
    ]
    for obj, wire in cases:
        assert _both_encode(codec, obj) == wire
        assert _both_decode(codec, wire) == obj
