"""Every declaration in protocol.messages, held against Apache Kafka's own message JSON.

Kafka's JSON comes from the verbatim copies kafka-python ships (4.3-era), and for the messages
it lacks from Apache Kafka 4.3.1's own kafka-clients jar (in apache_kafka's cache). For each
declaration and each version we serve, the fields present at that version must
match Kafka's, in wire order and recursively into structs (inline and common):
name, type, nullability, tag, default and ignorable flag. Every declaration must
also round-trip its default value at every version.
"""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from pathlib import Path

import kafka.protocol.schemas
import pytest

from apache_kafka.artefacts import KAFKA_VERSION, cache_dir
from protocol.api_keys import ApiKey
from protocol.messages import DATA, REQUESTS, RESPONSES
from protocol.schema import _UNSET, F, Message
from tests.support.processes import missing

RESOURCES = Path(kafka.protocol.schemas.__file__).parent / "resources"

DECLARATIONS = sorted([*REQUESTS.values(), *RESPONSES.values(), *DATA.values()],
                      key=lambda m: m.name)


#: Where we deliberately serve less than Kafka defines: name -> (Kafka's validVersions, ours).
CAPPED = {
    # InitProducerId v6 (two-phase commit, KIP-939) is unstable in Kafka 4.3: not advertised.
    "InitProducerIdRequest": ("0-6", "0-5"),
    "InitProducerIdResponse": ("0-6", "0-5"),
}

_PRIMITIVES = {"int8", "int16", "int32", "int64", "uint16", "float64", "bool", "uuid",
               "string", "bytes", "records"}
_INTS = {"int8", "int16", "int32", "int64", "uint16"}
_STRUCT = "<default struct>"            # a struct field's default: the all-defaults instance
_COMMENT = re.compile(r"(?m)^\s*//.*\n?")


def snake(name: str) -> str:
    return re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


def span(spec: str) -> tuple[int, int] | None:
    """Kafka's version spec, parsed independently of protocol.schema."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        return int(spec[:-1]), 1 << 15
    lo, _, hi = spec.partition("-")
    return int(lo), int(hi or lo)


def within(spec: str, version: int) -> bool:
    r = span(spec)
    return r is not None and r[0] <= version <= r[1]


def load_kafka(name: str) -> dict:
    """Kafka's JSON of message ``name``: kafka-python's copy, else the kafka-clients jar's."""
    shipped = RESOURCES / f"{name}.json"
    if shipped.exists():
        text = shipped.read_text()
    else:
        jar = cache_dir() / "lib" / f"kafka-clients-{KAFKA_VERSION}.jar"
        if not jar.exists():
            missing(f"kafka-python has no JSON for {name}, and {jar} is not cached (python3 -m apache_kafka)")
        with zipfile.ZipFile(jar) as z:
            text = z.read(f"common/message/{name}.json").decode()
    return json.loads(_COMMENT.sub("", text))


def element(type_: str) -> str:
    return type_[2:] if type_.startswith("[]") else type_


# --- one comparable row per field present at a version --------------------------------

def kafka_default(f: dict, is_struct: bool):
    t = f["type"]
    if "default" not in f:
        if t.startswith("[]"):
            return ()
        if is_struct:
            return _STRUCT
        return {"string": "", "bytes": b"", "records": None, "bool": False, "float64": 0.0,
                "uuid": uuid.UUID(int=0)}.get(t, 0)
    d = f["default"]
    if d == "null":
        return None
    if t in _INTS:
        return d if isinstance(d, int) else int(d, 0)
    if t == "bool":
        return d if isinstance(d, bool) else {"true": True, "false": False}[d]
    if t == "float64":
        return float(d)
    if t == "string":
        return d
    raise AssertionError(f"unmapped Kafka default {d!r} for {f['name']} ({t})")


def kafka_rows(fields: list[dict], version: int, common: dict[str, list[dict]]) -> list[dict]:
    rows = []
    for f in fields:
        if not within(f["versions"], version):
            continue
        is_struct = element(f["type"]) not in _PRIMITIVES
        sub = f.get("fields", common.get(element(f["type"])))
        tagged = within(f.get("taggedVersions", "none"), version)
        rows.append({
            "name": snake(f["name"]),
            "type": f["type"],
            "nullable": within(f.get("nullableVersions", "none"), version),
            "tag": f.get("tag") if tagged else None,
            "default": _norm(kafka_default(f, is_struct)),
            "explicit_default": "default" in f,
            "ignorable": bool(f.get("ignorable", False)),
            "fields": kafka_rows(sub, version, common) if is_struct else None,
        })
    return rows


def our_rows(msg: Message, cls: type, fields: list[F], version: int) -> list[dict]:
    rows = []
    for f in fields:
        if not within(f.versions_spec, version):
            continue
        default = cls.__dataclass_fields__[f.name].default
        if f.is_struct and not f.type.startswith("[]") and default is not None:
            assert type(default) is getattr(cls, f.element_type), f"{f.name}: default's class"
            default = _STRUCT if default == type(default)() else default
        rows.append({
            "name": f.name,
            "type": f.type,
            "nullable": within(f.nullable_spec, version),
            "tag": f.tag if within(f.tagged_spec, version) else None,
            "default": _norm(default),
            "explicit_default": f.explicit_default is not _UNSET,
            "ignorable": f.ignorable,
            "fields": (our_rows(msg, getattr(cls, f.element_type), msg.struct_fields(f), version)
                       if f.is_struct else None),
        })
    return rows


def _norm(value):
    """Make defaults comparable by type as well as value (False != 0, 0.0 != 0)."""
    return (type(value).__name__, value)


def diff(kafka: list[dict], ours: list[dict], path: str) -> list[str]:
    problems = []
    k_names, o_names = [r["name"] for r in kafka], [r["name"] for r in ours]
    if k_names != o_names:
        problems.append(f"{path}: fields {o_names}, Kafka has {k_names}")
    k_by, o_by = {r["name"]: r for r in kafka}, {r["name"]: r for r in ours}
    for name in k_by.keys() & o_by.keys():
        k, o = k_by[name], o_by[name]
        for attr in ("type", "nullable", "tag", "default", "explicit_default", "ignorable"):
            if k[attr] != o[attr]:
                problems.append(f"{path}.{name}: {attr} is {o[attr]!r}, Kafka has {k[attr]!r}")
        if k["fields"] is not None and o["fields"] is not None:
            problems += diff(k["fields"], o["fields"], f"{path}.{name}")
    return problems


def never_present(msg: Message, fields: list[F], path: str) -> list[str]:
    """Declared fields that exist at none of the versions we serve."""
    lo, hi = msg.valid
    out = []
    for f in fields:
        if not any(within(f.versions_spec, v) for v in range(lo, hi + 1)):
            out.append(f"{path}.{f.name} (versions {f.versions_spec}) is never served")
        if f.is_struct:
            out += never_present(msg, msg.struct_fields(f), f"{path}.{f.name}")
    return out


# --- the tests --------------------------------------------------------------------------

@pytest.mark.parametrize("msg", DECLARATIONS, ids=lambda m: m.name)
def test_matches_kafka_json(msg: Message):
    k = load_kafka(msg.name)
    assert k["name"] == msg.name
    assert k.get("apiKey") == msg.api_key
    assert k["type"] == msg.kind
    assert span(k["flexibleVersions"]) == span(msg.flexible_spec), "flexibleVersions differ"

    kafka_valid, ours = span(k["validVersions"]), span(msg.valid_spec)
    assert ours is not None and kafka_valid[0] <= ours[0] <= ours[1] <= kafka_valid[1], (
        f"valid {msg.valid_spec} is not within Kafka's {k['validVersions']}")
    if msg.name in CAPPED:
        assert (k["validVersions"], msg.valid_spec) == CAPPED[msg.name], "cap not as documented"
    else:
        assert ours == kafka_valid, f"valid {msg.valid_spec}, Kafka has {k['validVersions']}"

    common = {s["name"]: s["fields"] for s in k.get("commonStructs", [])}
    problems = never_present(msg, msg.fields, msg.name)
    for v in range(ours[0], ours[1] + 1):
        problems += diff(kafka_rows(k["fields"], v, common),
                         our_rows(msg, msg.cls, msg.fields, v), f"{msg.name} v{v}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("msg", DECLARATIONS, ids=lambda m: m.name)
def test_default_round_trips(msg: Message):
    default = msg.cls()
    for v in range(msg.min_version, msg.max_version + 1):
        codec = msg.codec(v)
        data = codec.encode(default)
        assert codec.decode(data) == default, f"v{v}"
        assert codec.encode_interpreted(default) == data, f"v{v}: interpreted encode differs"
        assert codec.decode_interpreted(data) == default, f"v{v}: interpreted decode differs"


_SAMPLES = {"int8": -3, "int16": 300, "int32": 70000, "int64": 2**40, "uint16": 65000,
            "float64": 1.5, "uuid": uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF),
            "bytes": b"\x00\x01", "records": b"\x07" * 5}


def _sample(msg: Message, cls: type, fields: list[F], version: int, null: bool):
    """A value whose every field present at ``version`` differs from its default.

    With ``null``, fields nullable at ``version`` are null instead (where that is not the default).
    """
    values = {}
    for f in fields:
        if not within(f.versions_spec, version):
            continue
        default = cls.__dataclass_fields__[f.name].default
        if null and within(f.nullable_spec, version) and default is not None:
            values[f.name] = None
            continue
        if f.is_struct:
            sub = getattr(cls, f.element_type)
            one = _sample(msg, sub, msg.struct_fields(f), version, null)
        elif f.element_type == "string":
            one = f"{f.name}-é"
        elif f.element_type == "bool":
            one = not default if isinstance(default, bool) else True
        else:
            one = _SAMPLES[f.element_type]
        values[f.name] = (one, one) if f.type.startswith("[]") else one
    return cls(**values)


@pytest.mark.parametrize("null", [False, True], ids=["filled", "nulls"])
@pytest.mark.parametrize("msg", DECLARATIONS, ids=lambda m: m.name)
def test_filled_value_round_trips(msg: Message, null: bool):
    for v in range(msg.min_version, msg.max_version + 1):
        value = _sample(msg, msg.cls, msg.fields, v, null)
        codec = msg.codec(v)
        data = codec.encode(value)
        assert codec.decode(data) == value, f"v{v}"
        assert codec.encode_interpreted(value) == data, f"v{v}: interpreted encode differs"
        assert codec.decode_interpreted(data) == value, f"v{v}: interpreted decode differs"


# --- the ConsumerGroup* APIs: facts checked by hand against apache/kafka ------------------
# (ConsumerGroupHeartbeat{Request,Response}.json and ConsumerGroupDescribe{Request,Response}.json
# under clients/src/main/resources/common/message/, 4.0-era: validVersions 0-1, flexible 0+.)

def _names(msg: Message, v: int, fields=None) -> list[str]:
    return [f.name for f in (msg.fields if fields is None else fields)
            if within(f.versions_spec, v)]


def _field(fields: list[F], name: str) -> F:
    return next(f for f in fields if f.name == name)


def _walk(msg: Message, fields: list[F]):
    for f in fields:
        yield f
        if f.is_struct:
            yield from _walk(msg, msg.struct_fields(f))


@pytest.mark.parametrize("api_key", [68, 69])
def test_consumer_group_apis_shape(api_key):
    for msg in (REQUESTS[api_key], RESPONSES[api_key]):
        assert (msg.valid_spec, msg.flexible_spec) == ("0-1", "0+")
        assert all(f.tagged is None for f in _walk(msg, msg.fields)), "no tagged fields"


def test_consumer_group_heartbeat_by_hand():
    req, resp = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT], RESPONSES[ApiKey.CONSUMER_GROUP_HEARTBEAT]
    assert req.name == "ConsumerGroupHeartbeatRequest"
    # v1 adds only the subscription regex, right after the topic names.
    v0, v1 = _names(req, 0), _names(req, 1)
    assert [n for n in v1 if n not in v0] == ["subscribed_topic_regex"]
    assert v1.index("subscribed_topic_regex") == v1.index("subscribed_topic_names") + 1
    assert v0[:3] == ["group_id", "member_id", "member_epoch"] and v0[-1] == "topic_partitions"
    regex = _field(req.fields, "subscribed_topic_regex")
    assert (regex.versions_spec, regex.nullable_spec, regex.explicit_default) == ("1+", "1+", None)
    assert req.cls().rebalance_timeout_ms == -1
    assert req.cls().subscribed_topic_names is None and req.cls().topic_partitions is None
    owned = _field(req.fields, "topic_partitions")
    assert [(f.name, f.type) for f in req.struct_fields(owned)] == [
        ("topic_id", "uuid"), ("partitions", "[]int32")]
    # Response: same fields at both versions; a nullable assignment struct, null by default.
    assert _names(resp, 0) == _names(resp, 1)
    assert _names(resp, 0)[:2] == ["throttle_time_ms", "error_code"]
    assignment = _field(resp.fields, "assignment")
    assert assignment.nullable_spec == "0+" and resp.cls().assignment is None
    assert resp.cls().member_id is None and resp.cls().error_message is None
    # Wire check: v0 and v1 requests of the default value differ by one byte (null regex).
    assert len(req.codec(1).encode(req.cls())) == len(req.codec(0).encode(req.cls())) + 1


def test_consumer_group_describe_by_hand():
    req, resp = REQUESTS[ApiKey.CONSUMER_GROUP_DESCRIBE], RESPONSES[ApiKey.CONSUMER_GROUP_DESCRIBE]
    assert _names(req, 0) == _names(req, 1) == ["group_ids", "include_authorized_operations"]
    group = _field(resp.fields, "groups")
    member = _field(resp.struct_fields(group), "members")
    member_fields = resp.struct_fields(member)
    m0, m1 = _names(resp, 0, member_fields), _names(resp, 1, member_fields)
    assert m1 == m0 + ["member_type"]          # v1 (KIP-1099) adds only the member type, last
    mt = _field(member_fields, "member_type")
    assert (mt.type, mt.versions_spec, mt.explicit_default, mt.ignorable) == ("int8", "1+", -1,
                                                                              True)
    assert _field(member_fields, "member_id").type == "string"
    assert _field(resp.struct_fields(group), "authorized_operations").explicit_default == -2**31
    assert set(resp.common) == {"TopicPartitions", "Assignment"}
    assert [(f.name, f.type) for f in resp.common["TopicPartitions"]] == [
        ("topic_id", "uuid"), ("topic_name", "string"), ("partitions", "[]int32")]
    # Hand-encoded v0 request: compact array of one (2), compact string "g" (2, "g"),
    # include_authorized_operations false (0), no tagged fields (0).
    obj = req.cls(group_ids=("g",), include_authorized_operations=False)
    assert req.codec(0).encode(obj) == b"\x02" + b"\x02g" + b"\x00" + b"\x00"


def test_tagged_struct_field_round_trips():
    """Regression: compiled encoding once wrote a tagged field's structs to the outer buffer."""
    msg = RESPONSES[ApiKey.API_VERSIONS]
    feature = msg.cls.SupportedFeatureKey(name="f", min_version=1, max_version=2)
    value = msg.cls(supported_features=(feature,))
    codec = msg.codec(3)
    assert codec.encode(value) == codec.encode_interpreted(value)
    assert codec.decode(codec.encode(value)) == value
