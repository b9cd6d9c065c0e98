"""The share coordinator's state (Kafka's ShareCoordinatorShard): what each share-partition has
made durable of its deliveries, kept in ``__share_group_state`` as snapshots and updates.

A share-partition writes its start offset and the batches whose state changed (acknowledged,
released, archived, with their delivery counts) each time it acknowledges, releases or lets a
lock run out; an update is merged into the last state, and after 500 updates the next write is
a whole snapshot. On a merge, where two batches overlap the one delivered more often wins, then
the one further along (archived over acknowledged over available). A share-partition made
after a restart starts from this state.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from offsets_log.errors import RecordError
from offsets_log.records import Record
from protocol.messages.offsets_records import SHARE_STATE_RECORDS as SS
from protocol.payloads import decode_payload, encode_payload
from protocol.exceptions import DecodeError, EncodeError
from protocol.uuids import kafka_uuid, parse_kafka_uuid

from coordinator.routing import shard_for

SNAPSHOT, UPDATE = 0, 1
UPDATES_PER_SNAPSHOT = 500
STATE_TOPIC = "__share_group_state"

#: (group id, topic id, partition)
Key = tuple[str, uuid.UUID, int]
#: (first offset, last offset, delivery state 0/2/4, delivery count)
StateBatch = tuple[int, int, int, int]


def state_partition(key: Key, partitions: int) -> int:
    """The ``__share_group_state`` partition of a share-partition: as Kafka hashes
    ``group:topic id:partition``."""
    group, topic_id, partition = key
    return shard_for(f"{group}:{kafka_uuid(topic_id)}:{partition}", partitions)


def share_state_key(text: str) -> bool:
    """Whether ``text`` is a share-state coordinator key, ``group:topic id:partition`` (Kafka's
    SharePartitionKey.getInstance: the group may hold colons, and must not be blank)."""
    tokens = text.split(":")
    while tokens and not tokens[-1]:
        tokens.pop()                        # Java's split drops trailing empty strings
    if len(tokens) < 3 or not ":".join(tokens[:-2]).strip():
        return False
    try:
        parse_kafka_uuid(tokens[-2])
        partition = int(tokens[-1])
    except ValueError:
        return False
    return -2**31 <= partition < 2**31 and tokens[-1].lstrip("+-").isdigit()


@dataclass
class PartitionState:
    start_offset: int = -1
    state_epoch: int = 0
    leader_epoch: int = 0
    snapshot_epoch: int = 0
    delivery_complete_count: int = -1
    batches: list[StateBatch] = field(default_factory=list)
    created: int = 0
    updates: int = 0


def combine(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """Kafka's PersisterStateBatchCombiner: batches below the start offset dropped (cut at it),
    overlaps resolved per offset by the higher delivery count, then the higher state, and
    neighbours with the same state and count joined."""
    best: dict[int, tuple[int, int]] = {}
    for first, last, state, count in batches:
        for offset in range(max(first, start_offset) if start_offset >= 0 else first, last + 1):
            old = best.get(offset)
            if old is None or (count, state) > (old[1], old[0]):
                best[offset] = (state, count)
    out: list[StateBatch] = []
    for offset in sorted(best):
        state, count = best[offset]
        if out and out[-1][1] == offset - 1 and out[-1][2:] == (state, count):
            out[-1] = (out[-1][0], offset, state, count)
        else:
            out.append((offset, offset, state, count))
    return out


class ShareStates:
    """Every share-partition's durable state, and the records that change it."""

    def __init__(self):
        self.states: dict[Key, PartitionState] = {}

    def read(self, key: Key) -> PartitionState | None:
        return self.states.get(key)

    def write(self, key: Key, start_offset: int, batches: list[StateBatch], delivery_complete: int,
              now: int) -> Record:
        """The record a WriteShareGroupState of these batches appends (replay it once written)."""
        current = self.states.get(key)
        if current is None or current.updates >= UPDATES_PER_SNAPSHOT:
            base = current or PartitionState(created=now)
            start = base.start_offset if start_offset == -1 else start_offset
            return snapshot_record(key, PartitionState(
                start_offset=start, state_epoch=base.state_epoch, leader_epoch=base.leader_epoch,
                snapshot_epoch=base.snapshot_epoch + (1 if current else 0), delivery_complete_count=delivery_complete,
                batches=combine(base.batches + batches, start), created=now), now)
        return update_record(key, current.snapshot_epoch, current.leader_epoch, start_offset, delivery_complete,
                             combine(batches, start_offset))

    def reset(self, key: Key, start_offset: int, now: int) -> Record:
        """Kafka's InitializeShareGroupState: a fresh snapshot at ``start_offset`` (-1: from the
        group's share.auto.offset.reset), no batches."""
        current = self.states.get(key)
        return snapshot_record(key, PartitionState(
            start_offset=start_offset, state_epoch=0 if current is None else current.state_epoch + 1,
            snapshot_epoch=0 if current is None else current.snapshot_epoch + 1,
            delivery_complete_count=-1 if start_offset == -1 else 0, created=now), now)

    def delete(self, key: Key) -> Record:
        """Kafka's DeleteShareGroupState: the snapshot's tombstone."""
        return Record(_key(SNAPSHOT, key), None)

    def replay(self, kind: int, key: Key, value) -> None:
        if value is None:
            self.states.pop(key, None)
            return
        batches = [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in value.state_batches]
        current = self.states.get(key)
        if kind == SNAPSHOT:
            self.states[key] = PartitionState(value.start_offset, value.state_epoch, value.leader_epoch,
                                              value.snapshot_epoch, value.delivery_complete_count, batches,
                                              value.create_timestamp, 0)
            return
        if current is None:
            self.states[key] = PartitionState(value.start_offset, 0, value.leader_epoch, value.snapshot_epoch,
                                              value.delivery_complete_count, batches, 0, 1)
            return
        start = current.start_offset if value.start_offset == -1 else value.start_offset
        current.start_offset = start
        current.delivery_complete_count = value.delivery_complete_count
        current.batches = combine(current.batches + batches, start)
        current.updates += 1


def _key(kind: int, key: Key) -> bytes:
    msg = SS.snapshot_key if kind == SNAPSHOT else SS.update_key
    try:
        return encode_payload(msg, kind, msg.cls(group_id=key[0], topic_id=key[1], partition=key[2]))
    except EncodeError as e:
        raise RecordError(str(e)) from e


def _batches(cls, batches):
    return tuple(cls(first_offset=f, last_offset=l, delivery_state=s, delivery_count=c) for f, l, s, c in batches)


def snapshot_record(key: Key, s: PartitionState, now: int) -> Record:
    cls = SS.snapshot_value.cls
    value = cls(snapshot_epoch=s.snapshot_epoch, state_epoch=s.state_epoch, leader_epoch=s.leader_epoch,
                start_offset=s.start_offset, delivery_complete_count=s.delivery_complete_count,
                create_timestamp=s.created, write_timestamp=now, state_batches=_batches(cls.StateBatch, s.batches))
    return Record(_key(SNAPSHOT, key), encode_payload(SS.snapshot_value, 0, value))


def update_record(key: Key, snapshot_epoch: int, leader_epoch: int, start_offset: int, delivery_complete: int,
                  batches: list[StateBatch]) -> Record:
    cls = SS.update_value.cls
    value = cls(snapshot_epoch=snapshot_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
                delivery_complete_count=delivery_complete, state_batches=_batches(cls.StateBatch, batches))
    return Record(_key(UPDATE, key), encode_payload(SS.update_value, 0, value))


def decode(record: Record) -> tuple[int, Key, object | None]:
    """(SNAPSHOT or UPDATE, key, value or None) of a ``__share_group_state`` record."""
    try:
        kind = int.from_bytes(record.key[:2], "big", signed=True)
        if kind not in (SNAPSHOT, UPDATE):
            raise RecordError(f"unknown share state record type (key version {kind})")
        key_msg, value_msg = (SS.snapshot_key, SS.snapshot_value) if kind == SNAPSHOT else (SS.update_key, SS.update_value)
        _, k = decode_payload(key_msg, record.key)
        value = None if record.value is None else decode_payload(value_msg, record.value)[1]
    except DecodeError as e:
        raise RecordError(f"bad share state record: {e}") from e
    return kind, (k.group_id, k.topic_id, k.partition), value
