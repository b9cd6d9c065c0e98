"""``groupbroker log dump|verify|compact``: offline tools for a stopped broker's data dir.

``dump`` prints one line per offsets-log record. Offset commits and classic group metadata
print as their decoded form; the KIP-848 consumer-group and share-group records (key types
3-8, 16 and 10-15) print as ``ConsumerGroupCurrentMemberAssignment(group='g', member='m',
member_epoch=3, ...)`` with Kafka's record and field names, topic ids as Kafka prints a Uuid (22
characters of URL-safe base64) after the topic's name where the dump knows it
(``orders(Xy3R...):0,1,2``), and their tombstones as ``...Tombstone(group='g', member='m')``.
Then the share coordinator's ``__share_group_state`` records, one line each:
``ShareSnapshot(group='g', topic=orders(Xy3R...), partition=0, ..., state_batches=[3-4
ARCHIVED x3, ...])``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
import uuid
from typing import Iterator

from topic_log.store import read_metadata
from topic_log.verify import verify_topics
from coordinator.consumer.member import MemberState
from coordinator.share.state import SNAPSHOT, STATE_TOPIC, decode as decode_share_state
from coordinator.streams.group import MemberState as StreamsMemberState
from offsets_log import tools
from offsets_log.errors import RecordError
from offsets_log.records import GROUP_RECORD_KEYS, STREAMS_GROUP_KEYS, GroupRecord, Record
from log_store.fs import RealFS
from protocol.uuids import kafka_uuid


def add_parser(commands) -> None:
    log_cmd = commands.add_parser("log", help="offline tools for the logs of a data dir")
    log_cmd.add_argument("action", choices=("dump", "verify", "compact"),
                         help="dump: one line per offsets-log record (consumer- and share-group "
                              "records with Kafka's record names, topic ids as Kafka prints "
                              "them), then per __share_group_state record; "
                              "verify: report torn or corrupt records in the offsets logs and "
                              "every topic partition (exit 1 if any); compact: compact every "
                              "shard (broker stopped)")
    log_cmd.add_argument("data_dir")
    log_cmd.add_argument("--shard", type=int, help="only this offsets-log shard (0-49), no topics")


def run(args) -> int:
    out = sys.stdout
    if args.action == "dump":
        for line in dump(args.data_dir, args.shard):
            out.write(line + "\n")
        return 0
    if args.action == "verify":
        problems = [(f"shard {shard}", problem)
                    for shard, problem in tools.verify_all(args.data_dir, args.shard)]
        if args.shard is None:
            problems += [(f"partition {name}", problem)
                         for name, problem in verify_topics(args.data_dir)]
        for where, problem in problems:
            out.write(f"{where}: {problem}\n")
        out.write(f"{len(problems)} problem(s)\n")
        return 1 if problems else 0
    results = tools.compact_all(args.data_dir, int(time.time() * 1000), args.shard)
    for shard, result in results.items():
        out.write(f"shard {shard}: {result}\n")
    return 0


# --------------------------------------------------------------------------- dump

def dump(data_dir: str, shard: int | None = None) -> Iterator[str]:
    """offsets_log.tools.dump's lines, the group records written readably; then (without
    ``shard``) the share state's."""
    names = topic_names(data_dir)
    yield from tools.dump(data_dir, shard, describe=lambda typed: consumer_group_text(typed, names)
                          if isinstance(typed, GroupRecord) else repr(typed))
    if shard is None:
        yield from share_state_dump(data_dir, names)


#: a share state batch's delivery state (Kafka's RecordState ids)
_DELIVERY_STATES = {0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}


def share_state_dump(data_dir: str, names: dict[uuid.UUID, str]) -> Iterator[str]:
    """One line per ``__share_group_state`` record, partition by partition."""
    fs = RealFS()
    for partition, directory in tools.logs_named(data_dir, STATE_TOPIC, fs):
        for f in tools.frames(directory, fs):
            where = f"{STATE_TOPIC}-{partition} offset={f.offset} append_ms={f.append_ms}"
            try:
                kind, (group, topic_id, index), value = decode_share_state(Record(f.key, f.value))
            except RecordError as e:
                yield f"{where} undecodable ({e}): key={f.key.hex()}"
                continue
            name = "ShareSnapshot" if kind == SNAPSHOT else "ShareUpdate"
            key = f"group={group!r}, topic={_topic(topic_id, names)}, partition={index}"
            if value is None:
                yield f"{where} {name}Tombstone({key})"
                continue
            fields = [f"{field.name}={getattr(value, field.name)!r}" for field in dataclasses.fields(value)
                      if field.name != "state_batches"]
            batches = ", ".join(f"{b.first_offset}-{b.last_offset} {_DELIVERY_STATES.get(b.delivery_state, b.delivery_state)}"
                                f" x{b.delivery_count}" for b in value.state_batches)
            yield f"{where} {name}({key}, {', '.join(fields)}, state_batches=[{batches}])"


_PARTITION_DIR = re.compile(r"(.+)-0\Z")


def topic_names(data_dir: str) -> dict[uuid.UUID, str]:
    """Topic id -> name of the topics in the data dir (from their partition-0 metadata)."""
    names = {}
    try:
        entries = os.listdir(data_dir)
    except OSError:
        return names
    for entry in entries:
        m = _PARTITION_DIR.match(entry)
        if m is None:
            continue
        try:
            topic_id, _ = read_metadata(os.path.join(data_dir, entry))
        except (OSError, KeyError, ValueError):
            continue
        names[topic_id] = m.group(1)
    return names


def consumer_group_text(record: GroupRecord, names: dict[uuid.UUID, str]) -> str:
    """One consumer-group record (or its tombstone) on one line. ``names`` learns the topic
    names a partition-metadata record carries, for the records after it."""
    name = GROUP_RECORD_KEYS[record.type][1].name.removesuffix("Value")
    key = [f"group={record.group!r}"]
    if record.sub is not None:
        key.append(f"{'regular_expression' if record.type == 16 else 'member'}={record.sub!r}")
    if record.value is None:
        return f"{name}Tombstone({', '.join(key)})"
    for topic in getattr(record.value, "topics", ()):
        if hasattr(topic, "topic_name"):
            names.setdefault(topic.topic_id, topic.topic_name)
    fields = [f"{f.name}={_streams_state(record.value.state)}" if record.type in STREAMS_GROUP_KEYS and f.name == "state"
              else f"{f.name}={_text(f.name, getattr(record.value, f.name), names)}"
              for f in dataclasses.fields(record.value)]
    return f"{name}({', '.join(key + fields)})"


def _streams_state(value: int) -> str:
    """A streams member's state (its own values: STABLE is 1)."""
    return StreamsMemberState(value).name if value in StreamsMemberState._value2member_map_ else str(value)


def _topic(topic_id: uuid.UUID, names: dict[uuid.UUID, str]) -> str:
    name = names.get(topic_id)
    return kafka_uuid(topic_id) if name is None else f"{name}({kafka_uuid(topic_id)})"


def _text(field: str, value, names: dict[uuid.UUID, str]) -> str:
    if field == "state" and isinstance(value, int):
        try:
            return MemberState(value).name
        except ValueError:
            return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_text("", v, names) for v in value) + "]"
    if isinstance(value, uuid.UUID):
        return _topic(value, names)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if dataclasses.is_dataclass(value):
        if hasattr(value, "topic_id") and hasattr(value, "partitions"):        # topic partitions
            return f"{_topic(value.topic_id, names)}:{','.join(str(p) for p in value.partitions)}"
        if hasattr(value, "topic_id") and hasattr(value, "num_partitions"):    # partition metadata
            racks = "".join(f" {p.partition}:{list(p.racks)}" for p in value.partition_metadata)
            return f"{value.topic_name}({kafka_uuid(value.topic_id)}):{value.num_partitions} partitions{racks}"
        return "(" + ", ".join(f"{f.name}={_text(f.name, getattr(value, f.name), names)}"
                               for f in dataclasses.fields(value)) + ")"
    return repr(value)
