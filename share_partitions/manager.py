"""The share-partitions of a broker (Kafka's SharePartitionManager): each share group's delivery
state of each topic partition it reads, the share sessions of its members, and the durable
share state in ``__share_group_state``.

A share-partition is made at its group's first fetch of the partition, from its durable state,
or else from the group's ``share.auto.offset.reset`` (latest by default). What an
acknowledgement, a release or an expired lock changes is appended to the share-state log
before it is answered; a share-partition made after a restart starts from it. Synchronous:
the broker's runtime (broker/data/share_fetch.py) waits, wakes and answers around it.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable, Hashable, Mapping

from coordinator.config import CoordinatorConfig
from coordinator.group_configs import share_reset_duration
from coordinator.metadata import MetadataImage
from coordinator.share.partition import Acquired, Limits, LogBatch, ShareError, SharePartition
from coordinator.share.sessions import ShareSessions
from coordinator.share.state import STATE_TOPIC, ShareStates, decode, state_partition
from offsets_log.errors import LogFailedError, RecordError
from offsets_log.log import ShardLog
from protocol.control_records import parse_control
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError
from protocol.records import read_batches

from topic_log import TopicsError

log = logging.getLogger("groupbroker.data")
E = ErrorCode
READ_COMMITTED = "read_committed"
#: Kafka's share.coordinator.state.topic.num.partitions
STATE_PARTITIONS = 50

#: (topic id, partition)
Key = tuple[object, int]


def now_ms() -> int:
    return int(time.time() * 1000)


def valid_member(member_id: str | None) -> bool:
    """KafkaApis.isMemberIdValid: 1 to 36 characters."""
    return bool(member_id) and len(member_id.encode("utf-16-le", "surrogatepass")) <= 72


def invalid_ack_batches(batches, version: int, renew: bool) -> bool:
    """KafkaApis.validateAcknowledgementBatches: ordered, each range covered by its types."""
    previous, top = -1, 4 if version >= 2 else 3
    for b in batches:
        types = b.acknowledge_types
        if b.first_offset > b.last_offset or b.first_offset < previous or not types \
                or (len(types) > 1 and b.last_offset - b.first_offset != len(types) - 1) \
                or any(t < 0 or t > top or (t == 4 and not renew) for t in types):
            return True
        previous = b.last_offset
    return False


class Read:
    """One partition's turn in a fetch: its error, records and what was acquired of them."""
    __slots__ = ("key", "error", "records", "acquired")

    def __init__(self, key: Key, error: ErrorCode = E.NONE, records: bytes = b"", acquired=()):
        self.key, self.error, self.records, self.acquired = key, error, records, list(acquired)


class SharePartitionManager:
    def __init__(self, data_dir: str, coordinator: CoordinatorConfig,
                 group_configs: Callable[[str], Mapping[str, str]]):
        self.data_dir, self.defaults, self.group_configs = data_dir, coordinator, group_configs
        self.partitions: dict[tuple[str, object, int], SharePartition] = {}
        self.sessions = ShareSessions(coordinator.group_share_max_share_sessions)
        self.states = ShareStates()
        self._logs: dict[int, ShardLog] = {}

    def limits(self, group_id: str) -> Limits:
        """The group's settings over the broker's (Kafka's ShareGroupConfigProvider)."""
        configs, c = self.group_configs(group_id), self.defaults

        def setting(name: str, default: int) -> int:
            return int(configs.get(name, default))
        return Limits(setting("share.delivery.count.limit", c.group_share_delivery_count_limit),
                      setting("share.partition.max.record.locks", c.group_share_partition_max_record_locks),
                      setting("share.record.lock.duration.ms", c.group_share_record_lock_duration_ms),
                      configs.get("share.renew.acknowledge.enable", "true").lower() == "true")

    # --- acquiring ----------------------------------------------------------------------------
    def acquire(self, group: str, member: str, interested: list[Key], open_log: Callable[[Key], object],
                max_records: int, batch_size: int, max_bytes: int, record_limit: bool = False
                ) -> tuple[list[Read], int]:
        """One pass over the partitions (``open_log`` gives each one's log, or raises the
        TopicsError it is answered with): records acquired for ``member``, at most
        ``max_records`` in all (whole batches: it may be passed), each partition read up to an
        even share of ``max_bytes``; the reads, and the bytes of records they carry."""
        committed = self.group_configs(group).get("share.isolation.level") == READ_COMMITTED
        per_partition = max(1, max_bytes // max(len(interested), 1))
        limits = self.limits(group)
        left, size, reads = max_records, 0, []
        for key in interested:
            read = Read(key)
            try:
                log_ = open_log(key)
                sp = self.partition(group, key, log_)
                sp.log_start_moved(log_.log_start_offset)
                if left > 0 and sp.can_acquire(limits):
                    offset = max(sp.next_fetch_offset(), log_.log_start_offset)
                    high = log_.last_stable_offset if committed else log_.high_watermark
                    if offset < high:
                        records = log_.read(offset, per_partition, upto=high, one_segment=True)
                        headers = read_batches(records, verify_crc=False) if records else []
                        fetched = [_log_batch(h, records) for h in headers]
                        aborted = [(a.producer_id, a.first_offset) for a in log_.transactions.aborted_between(
                            offset, fetched[-1].last_offset + 1)] if committed and fetched else None
                        read.acquired = sp.acquire(member, fetched, offset, left, batch_size, limits, now_ms(),
                                                   aborted, record_limit)
                        read.records = _slice(records, headers, read.acquired)
                left -= sum(a.last_offset - a.first_offset + 1 for a in read.acquired)
                size += len(read.records)
            except TopicsError as e:
                read.error = e.error_code
            except ShareError as e:               # a share-partition that cannot start yet
                read.error = e.code
            reads.append(read)
        return reads, size

    def partition(self, group: str, key: Key, log_) -> SharePartition:
        """The group's share-partition, made at its first fetch: from its durable state, or
        from share.auto.offset.reset."""
        sp = self.partitions.get((group, *key))
        if sp is None:
            durable = self.states.read((group, *key))
            start = -1 if durable is None else durable.start_offset
            if start == -1:
                start = self._reset_offset(group, log_)
            sp = self.partitions[(group, *key)] = SharePartition.restored(
                start, [] if durable is None else durable.batches)
        return sp

    def _reset_offset(self, group: str, log_) -> int:
        """Where share.auto.offset.reset starts a share-partition: the log's start, its end,
        or (by_duration) its first record no older than the duration, which Kafka cannot start
        from while there is none (OFFSET_NOT_AVAILABLE, asked again at the next fetch)."""
        reset = self.group_configs(group).get("share.auto.offset.reset", "latest").strip()
        duration = share_reset_duration(reset)
        if duration is not None:
            since = now_ms() - int(duration.total_seconds() * 1000)
            found = log_.offset_for_timestamp(since).offset
            if found < 0:
                raise ShareError(E.OFFSET_NOT_AVAILABLE, f"Offset for timestamp {since} not found")
            return found
        return log_.log_start_offset if reset == "earliest" else log_.high_watermark

    def forget(self, topic_id, partition: int) -> None:
        """Drop every group's share-partition of this topic partition: the next fetch makes it
        again from the durable state, so what was acquired and never written is fresh again
        (a new leader's SharePartition in Kafka)."""
        for key in [k for k in self.partitions if k[1:] == (topic_id, partition)]:
            del self.partitions[key]

    def next_deadline(self, skip=frozenset()) -> int | None:
        """The earliest lock deadline, but for the groups in ``skip``."""
        deadlines = [d for (group, *_), sp in self.partitions.items() if group not in skip
                     for d in (sp.next_deadline(),) if d is not None]
        return min(deadlines) if deadlines else None

    # --- acknowledging and releasing ----------------------------------------------------------
    def acknowledge(self, group: str, member: str, entries, version: int, renew: bool, *,
                    may_read: Callable[[str], bool], exists: Callable[[str, int], bool],
                    keep_empty: bool = True, settling: bool = False) -> dict[Key, tuple[ErrorCode, str | None]]:
        """KafkaApis.handleAcknowledgements over (key, topic name, batches): key -> (error,
        message). ``settling``: what is released stays out of reach until :meth:`settle`."""
        out, empty = {}, {}
        limits = self.limits(group)
        for key, name, batches in entries:
            if name is None:
                out[key] = (E.UNKNOWN_TOPIC_ID, None)
            elif invalid_ack_batches(batches, version, renew):
                out[key] = (E.INVALID_REQUEST, None)
            elif not may_read(name):
                out[key] = (E.TOPIC_AUTHORIZATION_FAILED, None)
            elif not exists(name, key[1]):
                out[key] = (E.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif not batches:
                empty[key] = (E.NONE, None)
            elif (sp := self.partitions.get((group, *key))) is None:
                out[key] = (E.UNKNOWN_TOPIC_OR_PARTITION, None)
            else:
                try:
                    sp.acknowledge(member, [(b.first_offset, b.last_offset, list(b.acknowledge_types))
                                            for b in batches], limits, now_ms(), settling)
                    out[key] = (E.NONE, None) if self.persist(group, key, sp) else (E.UNKNOWN_SERVER_ERROR, None)
                except ShareError as e:
                    out[key] = (e.code, e.message)
        if any(code == E.NONE for code, _ in out.values()) or keep_empty and out:
            out.update(empty)
        return out

    def start_offsets(self, group: str, keys) -> list[int | None]:
        """The start offsets of the group's share-partitions of ``keys`` (None: none yet)."""
        return [None if (sp := self.partitions.get((group, *key))) is None else sp.start_offset for key in keys]

    def settle(self, group: str, keys) -> None:
        for key in keys:
            sp = self.partitions.get((group, *key))
            if sp is not None:
                sp.settle()

    def end_session(self, node: int, group: str, member: str) -> list[Key]:
        """A member's session on ``node`` ended: the records it holds there go back; the
        partitions changed."""
        return self.release(group, member, self.sessions.release(node, group, member) or [])

    def release(self, group: str, member: str, partitions: list[Key]) -> list[Key]:
        """The records ``member`` holds in ``partitions`` go back; the partitions changed."""
        limits, changed = self.limits(group), []
        for key in partitions:
            sp = self.partitions.get((group, *key))
            if sp is not None and sp.release_member(member, limits):
                self.persist(group, key, sp)
                changed.append(key)
        return changed

    def disconnected(self, connection: Hashable) -> list[Key]:
        ended = self.sessions.disconnected(connection)
        return [] if ended is None else self.release(*ended)

    def expire(self, now: int, skip=frozenset(), groups=None) -> list[tuple[str, Key, int, int]]:
        """Release the records whose locks ran out (of ``groups``, or all but ``skip``):
        (group, partition, records released, of them archived) of each partition changed."""
        changed = []
        for (group, topic_id, index), sp in list(self.partitions.items()):
            if group in skip or (groups is not None and group not in groups):
                continue
            deadline = sp.next_deadline()
            expired = sp.expire_locks(now, self.limits(group)) if deadline is not None and deadline <= now else []
            if expired:
                self.persist(group, (topic_id, index), sp)
                changed.append((group, (topic_id, index), sum(last - first + 1 for first, last, _ in expired),
                                sum(last - first + 1 for first, last, state in expired if state != 0)))
        return changed

    def tallies(self, group: str, keys) -> list[tuple[Key, dict]]:
        """(partition, {outcome: records}) acknowledged since last asked, and forget them."""
        out = []
        for key in keys:
            sp = self.partitions.get((group, *key))
            if sp is not None and sp.tally:
                out.append((key, dict(sp.tally)))
                sp.tally.clear()
        return out

    # --- durable state ------------------------------------------------------------------------
    def _open(self, partition: int) -> ShardLog:
        shard_log = self._logs.get(partition)
        if shard_log is None:
            shard_log = self._logs[partition] = ShardLog(os.path.join(self.data_dir, f"{STATE_TOPIC}-{partition}"))
        return shard_log

    def has_state(self) -> bool:
        """Whether any share state was ever written (``__share_group_state`` exists)."""
        return bool(self._logs)

    def load(self) -> None:
        """Replay every ``__share_group_state`` log there is."""
        for partition in range(STATE_PARTITIONS):
            if os.path.isdir(os.path.join(self.data_dir, f"{STATE_TOPIC}-{partition}")):
                for _, record in self._open(partition).read_all():
                    try:
                        self.states.replay(*decode(record))
                    except RecordError as e:
                        log.error("%s-%d: a record skipped: %s", STATE_TOPIC, partition, e)

    def persist(self, group: str, key: Key, sp: SharePartition) -> bool:
        """Append what the share-partition has to make durable; whether that worked."""
        now = now_ms()
        state_key = (group, *key)
        try:
            record = self.states.write(state_key, *sp.durable_state(), now)
            self._open(state_partition(state_key, STATE_PARTITIONS)).append([record], now)
        except (LogFailedError, RecordError) as e:
            log.error("group %s: the share state of %s-%d cannot be written: %s", group, key[0], key[1], e)
            return False
        self.states.replay(*decode(record))
        return True

    def reset(self, group: str, key: Key, start_offset: int | None) -> None:
        """New share state for a share-partition (AlterShareGroupOffsets; None deletes it, as
        DeleteShareGroupOffsets does); a share-partition in memory is dropped, so the next
        fetch starts from the new state."""
        now, state_key = now_ms(), (group, *key)
        record = self.states.delete(state_key) if start_offset is None else \
            self.states.reset(state_key, start_offset, now)
        self._open(state_partition(state_key, STATE_PARTITIONS)).append([record], now)
        self.states.replay(*decode(record))
        self.partitions.pop(state_key, None)

    def close(self) -> None:
        for shard_log in self._logs.values():
            shard_log.close()

    # --- DescribeShareGroupOffsets ------------------------------------------------------------
    def offsets(self, group: str, topics, image: MetadataImage, initialized: Mapping,
                high_watermark: Callable[[str, int], int]):
        """[(topic name, topic id or None, [(partition, start offset, leader epoch, lag)])]:
        the named topics' (or, ``topics`` None, every ``initialized`` partition's) start offset
        and lag, known topics first; -1 until a first write."""
        asked = sorted((e.name, sorted(e.partitions)) for e in initialized.values()) if topics is None else topics
        known, unknown = [], []
        for name, partitions in asked:
            topic = image.topics.get(name)
            if topic is None:
                unknown.append((name, None, [(p, -1, 0, -1) for p in partitions]))
                continue
            rows = []
            for p in partitions:
                state = self.states.read((group, topic.topic_id, p)) if p < topic.num_partitions else None
                if state is None or state.start_offset == -1:
                    rows.append((p, -1, 0, -1))
                    continue
                lag = -1 if state.delivery_complete_count == -1 else \
                    high_watermark(name, p) - state.start_offset - state.delivery_complete_count
                rows.append((p, state.start_offset, state.leader_epoch, lag))
            known.append((name, topic.topic_id, rows))
        return known + unknown


def _log_batch(h, records: bytes) -> LogBatch:
    abort = False
    if h.is_control:
        try:
            abort = not parse_control(records[h.position:h.position + h.size])[0]
        except DecodeError:
            pass                        # not a marker: a control batch of another kind
    return LogBatch(h.base_offset, h.base_offset + h.last_offset_delta, h.producer_id, h.is_transactional,
                    h.is_control, abort)


def _slice(records: bytes, headers, acquired: list[Acquired]) -> bytes:
    """Kafka's maybeSliceFetchRecords: the whole batches that hold the acquired offsets."""
    if not acquired or len(headers) <= 1:
        return records if acquired else b""
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    start = max((h for h in headers if h.base_offset <= first), key=lambda h: h.base_offset, default=headers[0])
    end = max((h for h in headers if h.base_offset <= last), key=lambda h: h.base_offset)
    return records[start.position:end.position + end.size]
