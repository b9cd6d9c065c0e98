"""Build and parse ``__consumer_offsets`` records exactly as Kafka frames them.

A record is (key, value): key = INT16 key version + key body, value = INT16 value version +
value body, ``None`` value = tombstone. The key version is the record type (0/1 offset
commit, 2 group metadata). Writers use Kafka's choices: key v1 for commits (so every commit
of a partition shares one key and compaction keeps the latest), value v1 only when the commit
carries an explicit expiry, else v3; group metadata value v3.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple, Sequence

from protocol.control_records import control_key, marker_coordinator_epoch, marker_value
from protocol.exceptions import DecodeError, EncodeError
from protocol.messages.offsets_records import CONSUMER_GROUP_RECORDS as CG, RECORDS
from protocol.messages.offsets_records import SHARE_GROUP_RECORDS as SG
from protocol.messages.offsets_records import STREAMS_GROUP_RECORDS as ST
from protocol.payloads import decode_payload, encode_payload

from .errors import RecordError

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3

GroupMetadataValue = RECORDS.group_metadata_value.cls
MemberMetadata = GroupMetadataValue.MemberMetadata


class Record(NamedTuple):
    """A log record. A transactional one (TxnOffsetCommit) names its producer, as Kafka's
    transactional batches do; a transaction marker has ``control`` 0 (abort) or 1 (commit)
    and Kafka's control record key and value."""
    key: bytes
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1
    control: int = -1


@dataclass(slots=True)        # not frozen: one is built per committed partition (frozen is slower)
class OffsetCommit:
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int
    expire_ts: int | None          # None when the value carries no expiry (Kafka's -1)
    topic_id: uuid.UUID | None = None
    value_version: int = 3
    #: a TxnOffsetCommit's: pending until its producer's transaction ends (-1: a plain commit)
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass(frozen=True, slots=True)
class OffsetCommitTombstone:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    group: str
    value: object                  # a GroupMetadataValue (protocol.messages dataclass)
    value_version: int = GROUP_METADATA_VALUE_VERSION


@dataclass(frozen=True, slots=True)
class GroupMetadataTombstone:
    group: str


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A record of a KIP-848 consumer group, a KIP-932 share group or a KIP-1071 streams
    group; ``value`` None is its tombstone.

    ``type`` is the key version (see :data:`GROUP_RECORD_KEYS`); ``sub`` is the second key
    field of the member records (the member id) and of the regex record (the expression).
    """
    type: int
    group: str
    sub: str | None
    value: object | None


@dataclass(frozen=True, slots=True)
class TransactionMarker:
    """The end of a producer's transaction in this shard (Kafka's end-transaction marker)."""
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int


TypedRecord = (OffsetCommit | OffsetCommitTombstone | GroupMetadata | GroupMetadataTombstone
               | GroupRecord | TransactionMarker)

#: key version -> (key message, value message) of the consumer-group records
CONSUMER_GROUP_KEYS = {
    3: (CG.metadata_key, CG.metadata_value),
    4: (CG.partition_metadata_key, CG.partition_metadata_value),
    5: (CG.member_metadata_key, CG.member_metadata_value),
    6: (CG.target_assignment_metadata_key, CG.target_assignment_metadata_value),
    7: (CG.target_assignment_member_key, CG.target_assignment_member_value),
    8: (CG.current_member_assignment_key, CG.current_member_assignment_value),
    16: (CG.regular_expression_key, CG.regular_expression_value),
}
#: key version -> (key message, value message) of the share-group records
SHARE_GROUP_KEYS = {
    10: (SG.member_metadata_key, SG.member_metadata_value),
    11: (SG.metadata_key, SG.metadata_value),
    12: (SG.target_assignment_metadata_key, SG.target_assignment_metadata_value),
    13: (SG.target_assignment_member_key, SG.target_assignment_member_value),
    14: (SG.current_member_assignment_key, SG.current_member_assignment_value),
    15: (SG.state_partition_metadata_key, SG.state_partition_metadata_value),
}
#: key version -> (key message, value message) of the streams-group records
STREAMS_GROUP_KEYS = {
    17: (ST.metadata_key, ST.metadata_value),
    19: (ST.member_metadata_key, ST.member_metadata_value),
    20: (ST.target_assignment_metadata_key, ST.target_assignment_metadata_value),
    21: (ST.target_assignment_member_key, ST.target_assignment_member_value),
    22: (ST.current_member_assignment_key, ST.current_member_assignment_value),
    23: (ST.topology_key, ST.topology_value),
}
GROUP_RECORD_KEYS = {**CONSUMER_GROUP_KEYS, **SHARE_GROUP_KEYS, **STREAMS_GROUP_KEYS}


#: The longest STRING a record (or any Kafka message) can hold, in UTF-8 bytes: Kafka's
#: serializers throw beyond it.
STRING_MAX_BYTES = 0x7FFF


def string_too_long(text: str | None, reserve: int = 0) -> bool:
    """Would ``text`` plus ``reserve`` more bytes exceed :data:`STRING_MAX_BYTES`? Measured
    without encoding unless it could go either way (UTF-8 is 1-4 bytes per character)."""
    if text is None:
        return False
    room = STRING_MAX_BYTES - reserve
    if len(text) > room:
        return True
    if 4 * len(text) <= room or text.isascii():
        return False
    return len(text.encode("utf-8", "surrogatepass")) > room


def _varint_size(n: int) -> int:
    """Bytes of a zigzag varint (Kafka's record fields)."""
    n = (n << 1) ^ (n >> 63)
    size = 1
    while n >= 0x80:
        n >>= 7
        size += 1
    return size


#: A v2 record batch's header (Kafka's DefaultRecordBatch.RECORD_BATCH_OVERHEAD)
BATCH_OVERHEAD = 61


def batch_size(record: Record) -> int:
    """The bytes of a v2 record batch holding just ``record`` (uncompressed, no headers):
    what Kafka compares with the offsets topic's max.message.bytes before writing it."""
    value = -1 if record.value is None else len(record.value)
    body = (1 + 1 + 1                                   # attributes, timestamp and offset deltas
            + _varint_size(len(record.key)) + len(record.key)
            + _varint_size(value) + max(value, 0)
            + 1)                                        # no headers
    return BATCH_OVERHEAD + _varint_size(body) + body


def _encode(msg, version: int, body) -> bytes:
    try:
        return encode_payload(msg, version, body)
    except EncodeError as e:
        raise RecordError(str(e)) from e


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """Cached for ordinary names (the same partitions are committed again and again); names
    from clients can be long, and the cache must not keep them alive."""
    if len(group) + len(topic) > CACHED_KEY_CHARS:
        return _offset_commit_key(group, topic, partition)
    return _cached_offset_commit_key(group, topic, partition)


def _offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    body = RECORDS.offset_commit_key.cls(group=group, topic=topic, partition=partition)
    return _encode(RECORDS.offset_commit_key, OFFSET_COMMIT_KEY_VERSION, body)


CACHED_KEY_CHARS = 256
_cached_offset_commit_key = lru_cache(maxsize=16384)(_offset_commit_key)


def group_metadata_key(group: str) -> bytes:
    return _encode(RECORDS.group_metadata_key, GROUP_METADATA_KEY_VERSION,
                   RECORDS.group_metadata_key.cls(group=group))


def offset_commit_record(group: str, topic: str, partition: int, offset: int, leader_epoch: int,
                         metadata: str, commit_ts: int, expire_ts: int | None = None) -> Record:
    """Kafka writes value v1 only for an explicit expiry (it has no leader epoch), else v3."""
    return Record(offset_commit_key(group, topic, partition),
                  offset_commit_value(offset, leader_epoch, metadata, commit_ts, expire_ts))


def offset_commit_value(offset: int, leader_epoch: int, metadata: str | None, commit_ts: int,
                        expire_ts: int | None) -> bytes:
    """The value, packed directly: one is written per committed partition, and building the
    message object for the schema's codec cost more than everything else a commit does.
    tests/unit/offsets_log check it byte for byte against that codec."""
    raw = (metadata or "").encode("utf-8")
    if len(raw) > 0x7FFF:
        raise RecordError(f"OffsetCommitValue: metadata of {len(raw)} bytes is over the 32767 "
                          f"bytes a string can hold")
    try:
        if expire_ts is None:
            return _COMMIT_V3_HEAD.pack(3, offset, leader_epoch, len(raw)) + raw + _I64.pack(commit_ts)
        return _COMMIT_V1_HEAD.pack(1, offset, len(raw)) + raw + _I64_I64.pack(commit_ts, expire_ts)
    except struct.error as e:
        raise RecordError(f"OffsetCommitValue: {e}") from e


_COMMIT_V3_HEAD = struct.Struct(">hqih")      # version 3, offset, leader epoch, metadata length
_COMMIT_V1_HEAD = struct.Struct(">hqh")       # version 1, offset, metadata length
_I64 = struct.Struct(">q")
_I64_I64 = struct.Struct(">qq")


def group_metadata_record(group: str, *, protocol_type: str, generation: int,
                          protocol: str | None, leader: str | None, current_state_ts: int = -1,
                          members: Sequence = ()) -> Record:
    """``members`` are :data:`MemberMetadata` instances (subscription/assignment as bytes)."""
    value = GroupMetadataValue(protocol_type=protocol_type, generation=generation,
                               protocol=protocol, leader=leader,
                               current_state_timestamp=current_state_ts, members=tuple(members))
    return Record(group_metadata_key(group),
                  _encode(RECORDS.group_metadata_value, GROUP_METADATA_VALUE_VERSION, value))


def group_record(record: GroupRecord) -> Record:
    """The log form of a consumer-, share- or streams-group record (every value is written at version 0)."""
    key_msg, value_msg = GROUP_RECORD_KEYS[record.type]
    fields = {"group_id": record.group}
    if record.sub is not None:
        fields["member_id" if record.type != 16 else "regular_expression"] = record.sub
    key = _encode(key_msg, record.type, key_msg.cls(**fields))
    return Record(key, None if record.value is None else _encode(value_msg, 0, record.value))


def encode_record(record: TypedRecord) -> Record:
    """The log form of a typed record (what the coordinator writes)."""
    if isinstance(record, OffsetCommit):
        written = offset_commit_record(record.group, record.topic, record.partition, record.offset,
                                       record.leader_epoch, record.metadata, record.commit_ts,
                                       record.expire_ts)
        if record.producer_id >= 0:
            return written._replace(producer_id=record.producer_id, producer_epoch=record.producer_epoch)
        return written
    if isinstance(record, TransactionMarker):
        return Record(control_key(record.commit), marker_value(record.coordinator_epoch),
                      record.producer_id, record.producer_epoch, int(record.commit))
    if isinstance(record, OffsetCommitTombstone):
        return tombstone(offset_commit_key(record.group, record.topic, record.partition))
    if isinstance(record, GroupMetadataTombstone):
        return tombstone(group_metadata_key(record.group))
    if isinstance(record, GroupRecord):
        return group_record(record)
    raise TypeError(f"no log form for {type(record).__name__}")


def tombstone(key: bytes) -> Record:
    return Record(bytes(key), None)


def _decode(msg, data: bytes, what: str):
    try:
        return decode_payload(msg, data)
    except DecodeError as e:
        raise RecordError(f"bad {what}: {e}") from e


def decode(record: Record) -> TypedRecord:
    """The typed form of a log record, its producer and transaction marker included."""
    if record.control >= 0:
        try:
            epoch = marker_coordinator_epoch(record.value)
        except DecodeError:
            epoch = -1
        return TransactionMarker(record.producer_id, record.producer_epoch, record.control == 1, epoch)
    typed = decode_record(record.key, record.value)
    if record.producer_id >= 0 and isinstance(typed, OffsetCommit):
        typed.producer_id, typed.producer_epoch = record.producer_id, record.producer_epoch
    return typed


def decode_record(key: bytes, value: bytes | None) -> TypedRecord:
    """The typed form of one record; raises :class:`RecordError` for unknown or bad bytes.

    Value versions above the highest we know are read as that version (unknown tail ignored),
    as Kafka's readers do for these KIP-915 records.
    """
    if len(key) < 2:
        raise RecordError("record key shorter than its version prefix")
    key_version, = _VERSION_PREFIX.unpack_from(key)
    if key_version in (0, 1):
        group, topic, partition = _commit_key(key)
        if value is None:
            return OffsetCommitTombstone(group, topic, partition)
        return _commit_value(group, topic, partition, value)
    if key_version == GROUP_METADATA_KEY_VERSION:
        _, k = _decode(RECORDS.group_metadata_key, key, "GroupMetadataKey")
        if value is None:
            return GroupMetadataTombstone(k.group)
        version, v = _decode(RECORDS.group_metadata_value, value, "GroupMetadataValue")
        return GroupMetadata(k.group, v, version)
    if key_version in GROUP_RECORD_KEYS:
        key_msg, value_msg = GROUP_RECORD_KEYS[key_version]
        _, k = _decode(key_msg, key, key_msg.name)
        sub = getattr(k, "member_id", getattr(k, "regular_expression", None))
        v = None if value is None else _decode(value_msg, value, value_msg.name)[1]
        return GroupRecord(key_version, k.group_id, sub, v)
    raise RecordError(f"unknown record type (key version {key_version})")


def is_offset_commit_key(key: bytes) -> bool:
    """Key version 0 or 1: an offset commit (or its tombstone)."""
    return key[:2] in _COMMIT_KEY_VERSIONS


_COMMIT_KEY_VERSIONS = (b"\x00\x00", b"\x00\x01")


def commit_key_group(key: bytes) -> str:
    """The group of an offset commit's key; raises :class:`RecordError` for bad bytes."""
    return _commit_key(key)[0]


def _commit_key(key: bytes) -> tuple[str, str, int]:
    """(group, topic, partition) of an offset commit's key, read by the schema's codec once
    per group and topic: a key is its (group, topic) prefix and then the partition's four
    bytes, and a shard replays many partitions, and many commits, of each."""
    names = _COMMIT_KEY_NAMES.get(key[:-4])
    if names is not None:
        return names[0], names[1], _PARTITION.unpack_from(key, len(key) - 4)[0]
    _, k = _decode(RECORDS.offset_commit_key, key, "OffsetCommitKey")
    if len(_COMMIT_KEY_NAMES) >= _COMMIT_KEY_NAMES_MAX:
        _COMMIT_KEY_NAMES.clear()
    _COMMIT_KEY_NAMES[key[:-4]] = (k.group, k.topic)
    return k.group, k.topic, k.partition


def _commit_value(group: str, topic: str, partition: int, value: bytes) -> OffsetCommit:
    """The commit whose value is ``value``. Versions 0-3, what Kafka and we write, are read
    here directly: a load reads hundreds of thousands, and building the schema's message
    object first cost more than the rest of the replay. Version 4 and above (flexible, with
    tagged fields) go through the schema's codec, which tests/unit/offsets_log holds this
    reading to, error for error, on arbitrary bytes."""
    size = len(value)
    version = _VERSION_PREFIX.unpack_from(value)[0] if size >= 2 else -1
    head = _COMMIT_VALUE_HEADS.get(version)
    if head is None:
        version, v = _decode(RECORDS.offset_commit_value, value, "OffsetCommitValue")
        return OffsetCommit(group, topic, partition, v.offset, v.leader_epoch, v.metadata,
                            v.commit_timestamp, None if v.expire_timestamp == -1 else v.expire_timestamp,
                            None if v.topic_id.int == 0 else v.topic_id, version)
    tail = _I64_I64 if version == 1 else _I64
    if size < head.size:
        raise RecordError(f"bad OffsetCommitValue: truncated at byte {size} (version {version})")
    if version == 3:
        _, offset, leader_epoch, length = head.unpack_from(value)
    else:
        (_, offset, length), leader_epoch = head.unpack_from(value), -1
    start = head.size
    if length < 0 or start + length + tail.size != size:
        raise RecordError(f"bad OffsetCommitValue: metadata length {length} does not fit "
                          f"{size} bytes (version {version})")
    try:
        metadata = value[start:start + length].decode()
    except UnicodeDecodeError as e:
        raise RecordError(f"bad OffsetCommitValue: metadata is not UTF-8: {e}") from None
    if version == 1:
        commit_ts, expire_ts = tail.unpack_from(value, start + length)
        return OffsetCommit(group, topic, partition, offset, leader_epoch, metadata, commit_ts,
                            None if expire_ts == -1 else expire_ts, None, 1)
    return OffsetCommit(group, topic, partition, offset, leader_epoch, metadata,
                        tail.unpack_from(value, start + length)[0], None, None, version)


_PARTITION = struct.Struct(">i")
_VERSION_PREFIX = struct.Struct(">h")
_COMMIT_KEY_NAMES: dict[bytes, tuple[str, str]] = {}
_COMMIT_KEY_NAMES_MAX = 65_536
#: the fixed part of each version read directly, up to the metadata's length
_COMMIT_VALUE_HEADS = {0: _COMMIT_V1_HEAD, 1: _COMMIT_V1_HEAD, 2: _COMMIT_V1_HEAD, 3: _COMMIT_V3_HEAD}
