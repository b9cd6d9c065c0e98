"""Topic configs as Kafka 4.0 defines them: names, types, defaults, validators, broker synonyms.

A topic stores only its overrides (the configs given at CreateTopics or by AlterConfigs); every
other value comes from the broker (``log.retention.ms`` for ``retention.ms``...) or Kafka's own
default. :func:`validate` checks overrides in Kafka's order with Kafka's messages (unknown name,
then each config in definition order: its type, then its validator, then the cross-field rule);
:func:`describe` gives DescribeConfigs entries with their source and synonyms; :func:`apply`
hands the values a partition log uses to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

# DescribeConfigs' config_type codes and config_source codes
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
_TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", LONG: "LONG", DOUBLE: "DOUBLE",
               LIST: "LIST"}


class InvalidConfig(Exception):
    """A topic config Kafka refuses (INVALID_CONFIG), with Kafka's message."""


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: int
    default: str                                 # as DescribeConfigs shows it
    check: Callable[[object], str | None]        # a parsed value's problem, or None
    synonyms: tuple[str, ...]                    # the broker configs feeding its default
    doc: str


def at_least(low):
    return lambda v: None if v >= low else f"Value must be at least {low}"


def between(low, high):
    def check(v):
        if v < low:
            return f"Value must be at least {low}"
        return None if v <= high else f"Value must be no more than {high}"
    return check


def one_of(*choices):
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


def _level(low, high, also=None):
    def check(v):
        if low <= v <= high or v == also:
            return None
        extra = f" or equal to {also}" if also is not None else ""
        return f"Value must be between {low} and {high}{extra}"
    return check


def _throttled(name):
    def check(items):
        if items == ["*"] or all(_replica(i) for i in items):
            return None
        return (f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    return check


def _replica(item: str) -> bool:
    partition, sep, broker = item.partition(":")
    return bool(sep) and partition.strip().isdigit() and broker.strip().isdigit()


def _any(_value):
    return None


def _d(name, type_, default, check=_any, synonyms=(), doc=""):
    return ConfigDef(name, type_, default, check, tuple(synonyms), doc)


#: Every topic config of Kafka 4.0, in LogConfig's definition order (the order of its checks).
CONFIGS: dict[str, ConfigDef] = {d.name: d for d in (
    _d("segment.bytes", INT, "1073741824", at_least(1048576), ["log.segment.bytes"],
       "The segment file size for the log."),
    _d("segment.ms", LONG, "604800000", at_least(1), ["log.roll.ms", "log.roll.hours"],
       "The time after which the log rolls a new segment even if the segment is not full."),
    _d("segment.jitter.ms", LONG, "0", at_least(0), ["log.roll.jitter.ms", "log.roll.jitter.hours"],
       "The maximum random jitter subtracted from segment.ms."),
    _d("segment.index.bytes", INT, "10485760", at_least(4), ["log.index.size.max.bytes"],
       "The size of the index that maps offsets to file positions."),
    _d("flush.messages", LONG, str(LONG_MAX), at_least(1), ["log.flush.interval.messages"],
       "How many messages may be written before an fsync of the log is forced."),
    _d("flush.ms", LONG, str(LONG_MAX), at_least(0),
       ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
       "How long data may stay unflushed before an fsync of the log is forced."),
    _d("retention.bytes", LONG, "-1", _any, ["log.retention.bytes"],
       "The largest size a partition may grow to before old segments are deleted (-1: no limit)."),
    _d("retention.ms", LONG, "604800000", at_least(-1),
       ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
       "How long a log is kept before old segments are deleted (-1: no limit)."),
    _d("max.message.bytes", INT, "1048588", at_least(0), ["message.max.bytes"],
       "The largest record batch size allowed."),
    _d("index.interval.bytes", INT, "4096", at_least(0), ["log.index.interval.bytes"],
       "How often an entry is added to the offset index."),
    _d("delete.retention.ms", LONG, "86400000", at_least(0), ["log.cleaner.delete.retention.ms"],
       "How long tombstones are kept in a compacted topic."),
    _d("min.compaction.lag.ms", LONG, "0", at_least(0), ["log.cleaner.min.compaction.lag.ms"],
       "The minimum time a message stays uncompacted."),
    _d("max.compaction.lag.ms", LONG, str(LONG_MAX), at_least(1), ["log.cleaner.max.compaction.lag.ms"],
       "The maximum time a message stays ineligible for compaction."),
    _d("file.delete.delay.ms", LONG, "60000", at_least(0), ["log.segment.delete.delay.ms"],
       "The time to wait before deleting a file from the filesystem."),
    _d("min.cleanable.dirty.ratio", DOUBLE, "0.5", between(0, 1), ["log.cleaner.min.cleanable.ratio"],
       "How dirty the log must be before the cleaner compacts it."),
    _d("cleanup.policy", LIST, "delete", one_of("compact", "delete"), ["log.cleanup.policy"],
       "delete (discard old segments), compact (keep the latest value of each key), or both."),
    _d("unclean.leader.election.enable", BOOLEAN, "false", _any, ["unclean.leader.election.enable"],
       "Whether replicas outside the ISR may be elected leader."),
    _d("min.insync.replicas", INT, "1", at_least(1), ["min.insync.replicas"],
       "The minimum number of replicas that must acknowledge a write with acks=all."),
    _d("compression.type", STRING, "producer",
       one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), ["compression.type"],
       "The final compression type of the topic's data."),
    _d("compression.gzip.level", INT, "-1", _level(1, 9, -1), ["compression.gzip.level"],
       "The compression level of gzip."),
    _d("compression.lz4.level", INT, "9", _level(1, 17), ["compression.lz4.level"],
       "The compression level of lz4."),
    _d("compression.zstd.level", INT, "3", _level(-131072, 22), ["compression.zstd.level"],
       "The compression level of zstd."),
    _d("preallocate", BOOLEAN, "false", _any, ["log.preallocate"],
       "Whether segment files are preallocated."),
    _d("message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
       ["log.message.timestamp.type"], "CreateTime (the producer's) or LogAppendTime (the broker's)."),
    _d("message.timestamp.before.max.ms", LONG, str(LONG_MAX), at_least(0),
       ["log.message.timestamp.before.max.ms"],
       "How far a message's timestamp may lie before the broker's time."),
    _d("message.timestamp.after.max.ms", LONG, "3600000", at_least(0),
       ["log.message.timestamp.after.max.ms"],
       "How far a message's timestamp may lie after the broker's time."),
    _d("leader.replication.throttled.replicas", LIST, "", _throttled("leader.replication.throttled.replicas"),
       (), "The replicas whose log replication is throttled on the leader side."),
    _d("follower.replication.throttled.replicas", LIST, "",
       _throttled("follower.replication.throttled.replicas"), (),
       "The replicas whose log replication is throttled on the follower side."),
    _d("remote.storage.enable", BOOLEAN, "false", _any, (), "Whether tiered storage is enabled."),
    _d("local.retention.ms", LONG, "-2", at_least(-2), ["log.local.retention.ms"],
       "How long local segments are kept with tiered storage."),
    _d("local.retention.bytes", LONG, "-2", at_least(-2), ["log.local.retention.bytes"],
       "How large local segments may grow with tiered storage."),
    _d("remote.log.copy.disable", BOOLEAN, "false", _any, (), "Whether copying to tiered storage stops."),
    _d("remote.log.delete.on.disable", BOOLEAN, "false", _any, (),
       "Whether remote data is deleted when tiered storage is turned off."),
)}


def parse(d: ConfigDef, text: str, *, check: bool = True):
    """The typed value of ``text`` for ``d``, or InvalidConfig with ConfigDef's message
    (``check=False``: the type only, for values the broker's own settings gave)."""
    raw = text.strip()
    try:
        if d.type == BOOLEAN:
            if raw.lower() not in ("true", "false"):
                raise InvalidConfig(f"Invalid value {text} for configuration {d.name}: Expected value "
                                    "to be either true or false")
            value = raw.lower() == "true"
        elif d.type in (INT, LONG):
            value = int(raw)
            limit = INT_MAX if d.type == INT else LONG_MAX
            if not -limit - 1 <= value <= limit:
                raise ValueError(raw)
        elif d.type == DOUBLE:
            value = float(raw)
        elif d.type == LIST:
            value = [item.strip() for item in raw.split(",")] if raw else []
        else:
            value = raw
    except ValueError:
        raise InvalidConfig(f"Invalid value {text} for configuration {d.name}: Not a number of type "
                            f"{_TYPE_NAMES[d.type]}") from None
    if not check:
        return value
    if d.name == "cleanup.policy":            # Kafka's ValidList checks each item by itself
        checked = [(item, d.check(item)) for item in value]
    else:
        checked = [(f"[{', '.join(value)}]" if d.type == LIST else text, d.check(value))]
    for shown, problem in checked:
        if problem is not None:
            raise InvalidConfig(f"Invalid value {shown} for configuration {d.name}: {problem}")
    return value


def validate(overrides: dict[str, str | None]) -> dict[str, str]:
    """Kafka's LogConfig.validate for a topic's whole override set; the overrides as stored.

    Raises InvalidConfig: null values, then the first unknown name, then each config in
    definition order (type, then validator), then min.compaction.lag.ms against
    max.compaction.lag.ms.
    """
    nulls = [name for name, value in overrides.items() if value is None]
    if nulls:
        raise InvalidConfig(f"Null value not supported for topic configs: {','.join(nulls)}")
    unknown = next((name for name in overrides if name not in CONFIGS), None)
    if unknown is not None:
        raise InvalidConfig(f"Unknown topic config name: {unknown}")
    values = {name: parse(d, overrides[name]) for name, d in CONFIGS.items() if name in overrides}
    low = values.get("min.compaction.lag.ms", 0)
    high = values.get("max.compaction.lag.ms", LONG_MAX)
    if low > high:
        raise InvalidConfig(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                            f"max.compaction.lag.ms ({high})")
    return dict(overrides)


@dataclass(frozen=True)
class Entry:
    """One DescribeConfigs entry: value, source and synonyms (name, value, source)."""
    name: str
    value: str
    source: int
    synonyms: tuple[tuple[str, str, int], ...]
    type: int
    doc: str


def describe(overrides: dict[str, str], layers: list[tuple[dict[str, str], int]]) -> list[Entry]:
    """Every topic config as DescribeConfigs shows it for a topic with ``overrides`` on a broker
    whose settings come in ``layers`` ((Kafka-named settings, their source), highest first:
    dynamic per broker, dynamic cluster default, server.properties). Synonyms as Kafka's
    ConfigHelper lists them: the topic override, each layer's settings, then the broker
    defaults that exist, dropping leading entries until the config's own broker name."""
    merged = {name: value for values, _ in reversed(layers) for name, value in values.items()}
    out = []
    for d in CONFIGS.values():
        chain = [(s, values[s], source) for values, source in layers for s in d.synonyms if s in values]
        chain += [(s, _BROKER_DEFAULTS[s], DEFAULT_CONFIG) for s in d.synonyms if s in _BROKER_DEFAULTS]
        while chain and d.synonyms and chain[0][0] != d.synonyms[0]:
            chain.pop(0)
        if d.name in overrides:
            chain.insert(0, (d.name, overrides[d.name], TOPIC_CONFIG))
        value = overrides[d.name] if d.name in overrides else broker_value(d, merged)
        out.append(Entry(d.name, value, chain[0][2] if chain else DEFAULT_CONFIG, tuple(chain),
                         d.type, d.doc))
    return out


def broker_value(d: ConfigDef, broker: dict[str, str]) -> str:
    """The topic value the broker's settings give ``d`` (e.g. log.retention.hours in ms)."""
    for name in d.synonyms:
        if name in broker:
            return str(int(broker[name]) * _UNIT.get(name, 1)) if name in _UNIT else broker[name]
    return d.default


def effective(overrides: dict[str, str], broker: dict[str, str]) -> dict[str, object]:
    """The typed value of every topic config for a topic with ``overrides``."""
    return {name: parse(d, overrides[name]) if name in overrides else
            parse(d, broker_value(d, broker), check=False) for name, d in CONFIGS.items()}


def apply(log, values: dict[str, object]) -> None:
    """Hand a partition log the configs it acts on."""
    log.segment_bytes, log.segment_ms = values["segment.bytes"], values["segment.ms"]
    log.retention_bytes, log.retention_ms = values["retention.bytes"], values["retention.ms"]
    log.max_message_bytes = values["max.message.bytes"]
    log.log_append_time = values["message.timestamp.type"] == "LogAppendTime"
    log.timestamp_before_max_ms = values["message.timestamp.before.max.ms"]
    log.timestamp_after_max_ms = values["message.timestamp.after.max.ms"]
    log.cleanup_policy = frozenset(values["cleanup.policy"])
    log.delete_retention_ms = values["delete.retention.ms"]
    log.min_compaction_lag_ms = values["min.compaction.lag.ms"]
    log.max_compaction_lag_ms = values["max.compaction.lag.ms"]
    log.min_cleanable_dirty_ratio = values["min.cleanable.dirty.ratio"]


def _broker_defaults() -> dict[str, str]:
    """The broker settings that have a default of their own (log.retention.ms, log.roll.ms
    and the like have none: their default comes from the hours setting)."""
    out = {d.synonyms[0]: d.default for d in CONFIGS.values() if len(d.synonyms) == 1}
    out.update({"log.retention.hours": "168", "log.roll.hours": "168", "log.roll.jitter.hours": "0",
                "log.flush.scheduler.interval.ms": str(LONG_MAX)})
    return out


_BROKER_DEFAULTS = _broker_defaults()


def broker_default(name: str) -> str | None:
    """The default of a broker setting behind a topic config (None: it has none of its own)."""
    return _BROKER_DEFAULTS.get(name)
#: Broker settings in larger units than the topic config they feed.
_UNIT = {"log.retention.minutes": 60_000, "log.retention.hours": 3_600_000, "log.roll.hours": 3_600_000,
         "log.roll.jitter.hours": 3_600_000}
#: Those settings, INTs where the topic config is a LONG.
COARSE_SYNONYMS = frozenset(_UNIT)
