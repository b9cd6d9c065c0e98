"""The compiled codec against the interpreted one, for every declared message and version.

Both modes must give the same bytes and the same objects, and must refuse bad
frames (truncated, extended, mutated, random) with ``DecodeError`` and nothing
else. Fields absent from a version must hold their defaults when encoding
(``EncodeError`` otherwise) unless Kafka marks them ignorable.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.api_keys import ApiKey
from protocol.exceptions import DecodeError, EncodeError
from protocol.messages import REQUESTS
from tests.support.strategies import (all_cases, case_id, field_strategy, is_nullable, is_present, replace_at,
                                      struct_levels, values_for)

CASES = all_cases()

FAST = settings(max_examples=10, deadline=None, report_multiple_bugs=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])


def decode_both(codec, data: bytes):
    """Each mode's outcome: ("ok", object) or ("error", None); any other exception fails."""
    outcomes = []
    for mode in (codec.decode, codec.decode_interpreted):
        try:
            outcomes.append(("ok", mode(data)))
        except DecodeError:
            outcomes.append(("error", None))
        except Exception as e:      # noqa: BLE001 - the point is to catch the wrong type
            pytest.fail(f"{mode.__name__} raised {type(e).__name__}: {e} (not DecodeError) "
                        f"on {data.hex()}")
    return outcomes


def assert_refused(codec, data: bytes, what: str):
    for (outcome, obj), mode in zip(decode_both(codec, data), ("compiled", "interpreted")):
        assert outcome == "error", f"{mode} decode accepted a {what} frame {data.hex()}: {obj}"


def encode_both(codec, obj):
    """Each mode's outcome: ("ok", bytes) or ("error", None); any other exception fails."""
    outcomes = []
    for mode in (codec.encode, codec.encode_interpreted):
        try:
            outcomes.append(("ok", mode(obj)))
        except EncodeError:
            outcomes.append(("error", None))
        except Exception as e:      # noqa: BLE001
            pytest.fail(f"{mode.__name__} raised {type(e).__name__}: {e} (not EncodeError)")
    return outcomes


def any_values(msg, version):
    """Values with defaults mixed in, or with every present field off its default."""
    return st.booleans().flatmap(lambda non_default: values_for(msg, version,
                                                                non_default=non_default))


@pytest.mark.parametrize("case", CASES, ids=case_id)
@FAST
@given(data=st.data())
def test_round_trip_and_framing(case, data):
    msg, version = case
    codec = msg.codec(version)
    value = data.draw(any_values(msg, version), label="value")

    wire = codec.encode(value)
    assert codec.encode_interpreted(value) == wire
    assert b"".join(bytes(p) for p in codec.encode_parts(value)) == wire
    assert codec.decode(wire) == value
    assert codec.decode_interpreted(wire) == value
    junk = data.draw(st.binary(max_size=3), label="leading junk")
    assert codec.decode(junk + wire, len(junk)) == value
    assert codec.decode_interpreted(junk + wire, len(junk)) == value

    if wire:
        cuts = data.draw(st.lists(st.integers(0, len(wire) - 1), min_size=1, max_size=4,
                                  unique=True), label="truncate at")
        for cut in cuts:
            assert_refused(codec, wire[:cut], f"truncated ({cut} of {len(wire)} bytes)")
    extra = data.draw(st.binary(min_size=1, max_size=4), label="trailing bytes")
    assert_refused(codec, wire + extra, "extended")


@pytest.mark.parametrize("case", CASES, ids=case_id)
@settings(FAST, max_examples=2)
@given(data=st.data())
def test_every_prefix_is_refused(case, data):
    msg, version = case
    codec = msg.codec(version)
    wire = codec.encode(data.draw(values_for(msg, version, non_default=True), label="value"))
    for cut in range(len(wire)):
        assert_refused(codec, wire[:cut], f"truncated ({cut} of {len(wire)} bytes)")


@st.composite
def _mutated(draw, msg, version):
    wire = bytearray(msg.codec(version).encode(draw(any_values(msg, version))))
    for _ in range(draw(st.integers(1, 3), label="mutations")):
        op = draw(st.sampled_from(["set", "insert", "delete"]))
        at = draw(st.integers(0, len(wire)))
        if op == "insert" or not wire:
            wire[at:at] = draw(st.binary(min_size=1, max_size=2))
        elif op == "set":
            wire[min(at, len(wire) - 1)] = draw(st.integers(0, 255))
        else:
            del wire[min(at, len(wire) - 1)]
    return bytes(wire)


@pytest.mark.parametrize("case", CASES, ids=case_id)
@FAST
@given(data=st.data())
def test_random_and_mutated_bytes(case, data):
    msg, version = case
    codec = msg.codec(version)
    raw = data.draw(st.one_of(st.binary(max_size=48), _mutated(msg, version)), label="bytes")
    (a, obj_a), (b, obj_b) = decode_both(codec, raw)
    assert a == b, f"compiled {a}, interpreted {b} on {raw.hex()}: {obj_a if a == 'ok' else obj_b}"
    if a == "ok":
        assert obj_a == obj_b
        # whatever decodes is a valid value: it encodes in both modes and decodes back
        (ea, wa), (eb, wb) = encode_both(codec, obj_a)
        assert ea == eb == "ok" and wa == wb
        assert codec.decode(wa) == obj_a


def _absent_fields(msg, version):
    """(path, struct class, field) of every field absent at ``version`` in a struct present there."""
    for path, cls, fields in struct_levels(msg, version):
        for f in fields:
            if not is_present(msg, f, version):
                yield path, cls, f


def _a_version_with(msg, f):
    for v in range(msg.min_version, msg.max_version + 1):
        if is_present(msg, f, v):
            return v
    return None


ABSENT_CASES = [c for c in CASES if any(_absent_fields(*c))]


@pytest.mark.parametrize("case", ABSENT_CASES, ids=case_id)
@settings(FAST, max_examples=5)
@given(data=st.data())
def test_absent_field_must_hold_its_default(case, data):
    msg, version = case
    codec = msg.codec(version)
    base = data.draw(values_for(msg, version, non_default=True), label="base")
    base_wire = codec.encode(base)
    for path, cls, f in _absent_fields(msg, version):
        other = _a_version_with(msg, f)
        if other is None:               # never on the wire in any version: any value will do
            value = object()
        else:
            value = data.draw(field_strategy(msg, cls, f, other, non_default=True),
                              label=".".join(path + (f.name,)))
        obj = replace_at(base, path, f.name, value)
        where = f"{msg.name} v{version} {'.'.join(path + (f.name,))}"
        outcomes = encode_both(codec, obj)
        if f.ignorable:
            assert outcomes == [("ok", base_wire)] * 2, f"{where}: ignorable field not dropped"
        else:
            assert outcomes == [("error", None)] * 2, f"{where}: non-default absent field accepted"


# --- tagged-field order: both modes must agree ------------------------------------------

@pytest.mark.parametrize("tags", [
    b"\x02\x09\x00\x07\x00",            # descending tags
    b"\x02\x07\x00\x07\x00",            # a repeated tag
], ids=["descending", "repeated"])
def test_out_of_order_tags_same_answer_in_both_modes(tags):
    msg = REQUESTS[ApiKey.HEARTBEAT]
    obj = msg.cls(group_id="g", generation_id=1, member_id="m", group_instance_id=None)
    codec = msg.codec(4)
    wire = codec.encode(obj)[:-1] + tags
    (a, obj_a), (b, obj_b) = decode_both(codec, wire)
    assert (a, obj_a) == (b, obj_b), f"compiled {a}, interpreted {b} on {wire.hex()}"


# --- values of the wrong type or range: EncodeError in both modes -------------------------

_INT_RANGES = {"int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
               "uint16": (0, 2**16 - 1), "int32": (-(2**31), 2**31 - 1),
               "int64": (-(2**63), 2**63 - 1)}


def _invalid_values(msg, f, version):
    """Values field ``f`` can never carry at ``version``."""
    bad = []
    if not is_nullable(f, version):
        bad.append(None)
    t = f.element_type
    if f.type.startswith("[]"):
        element = {"string": 5, "uuid": "x", "bytes": "text", "float64": "x", "bool": "yes"}.get(
            t, _INT_RANGES.get(t, (0, 0))[1] + 1 if t in _INT_RANGES else 5)
        return bad + [5, object(), (element,)]
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        bad += [lo - 1, hi + 1, "1", 1.5]
    elif t == "float64":
        bad += ["1.0", b"x"]
    elif t == "bool":
        bad += ["yes", 2]
    elif t == "string":
        bad += [5, b"bytes", "\ud800"]          # a lone surrogate has no UTF-8 form
    elif t in ("bytes", "records"):
        bad += ["text", 5, [1, 2]]
    elif t == "uuid":
        bad += ["0123456789abcdef0123456789abcdef", 5]
    elif f.is_struct:
        bad += [5, "struct"]
    return bad


@pytest.mark.parametrize("case", CASES, ids=case_id)
@settings(FAST, max_examples=2)
@given(data=st.data())
def test_invalid_values_refused_in_both_modes(case, data):
    msg, version = case
    codec = msg.codec(version)
    base = data.draw(values_for(msg, version, non_default=True), label="base")
    for path, cls, fields in struct_levels(msg, version):
        for f in fields:
            if not is_present(msg, f, version):
                continue
            for bad in _invalid_values(msg, f, version):
                obj = replace_at(base, path, f.name, bad)
                where = f"{msg.name} v{version} {'.'.join(path + (f.name,))} = {bad!r}"
                outcomes = []
                for mode in (codec.encode, codec.encode_interpreted,
                             lambda o: b"".join(codec.encode_parts(o))):
                    try:
                        outcomes.append(("ok", mode(obj)))
                    except EncodeError:
                        outcomes.append(("error", None))
                    except Exception as e:  # noqa: BLE001
                        outcomes.append((type(e).__name__, str(e)))
                assert outcomes == [("error", None)] * 3, f"{where}: {outcomes}"


def test_wrong_message_type_refused():
    hb, jg = REQUESTS[ApiKey.HEARTBEAT], REQUESTS[ApiKey.JOIN_GROUP]
    codec = hb.codec(4)
    for mode in (codec.encode, codec.encode_interpreted, codec.encode_parts):
        with pytest.raises(EncodeError):
            mode(jg.cls())


def test_known_tagged_field_must_fill_its_size_exactly():
    msg = REQUESTS[ApiKey.FETCH]                                           # Fetch v12: cluster_id is tag 0
    codec = msg.codec(12)
    obj = msg.cls(cluster_id="a")
    wire = codec.encode(obj)
    assert wire.endswith(b"\x01\x00\x02\x02a")                 # 1 tag: tag 0, size 2, "a"
    assert decode_both(codec, wire) == [("ok", obj)] * 2
    for bad in (b"\x01\x00\x03\x02a\xff",                      # a byte left over inside the tag
                b"\x01\x00\x01\x02a"):                         # the value runs past its size
        assert_refused(codec, wire[:-5] + bad, "mis-sized tagged field")


@pytest.mark.parametrize("version", [3, 9])                    # classic and flexible Produce
def test_records_are_never_copied(version):
    msg = REQUESTS[ApiKey.PRODUCE]
    topic_f = next(f for f in msg.fields if f.is_struct)
    topic = getattr(msg.cls, topic_f.element_type)
    part_f = next(f for f in msg.struct_fields(topic_f) if f.is_struct)
    part = getattr(topic, part_f.element_type)
    payload = bytes(range(200))
    codec = msg.codec(version)

    def build(records):
        return msg.cls(acks=-1, timeout_ms=1000, **{topic_f.name: (topic(**{
            "name": "t", part_f.name: (part(index=0, records=records),)}),)})
    expected = codec.encode(build(payload))
    for records in (memoryview(payload), bytearray(payload), memoryview(payload)[0:200]):
        obj = build(records)
        parts = codec.encode_parts(obj)
        assert any(p is records for p in parts), "the records chunk was copied"
        assert codec.encode(obj) == codec.encode_interpreted(obj) == expected
