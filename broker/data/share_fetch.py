"""ShareFetch and ShareAcknowledge (KIP-932): share-group members acquire records under a lock
and acknowledge them, within share sessions (Kafka's SharePartitionManager).

The delivery state of each (group, topic partition) is a :class:`coordinator.share.partition.SharePartition`,
made at the group's first fetch of the partition from its ``share.auto.offset.reset`` (latest
by default); locks that run out release their records (``lock_loop``); a session that ends,
or whose connection closes, releases what its member held. A fetch long-polls like Fetch, and
is woken by appends and by records released. What each acknowledgement, release and expiry
changes is appended to ``__share_group_state`` (:mod:`coordinator.share.state`) before it is
answered, and a share-partition made after a restart starts from it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Callable, Mapping

import trio

from coordinator.share.partition import LogBatch, Limits, SharePartition, ShareError
from coordinator.share.sessions import FINAL_EPOCH, SessionError, ShareSessions
from coordinator.share.state import STATE_TOPIC, ShareStates, decode, state_partition
from offsets_log.errors import LogFailedError, RecordError
from offsets_log.log import ShardLog
from protocol.api_keys import ApiKey
from protocol.control_records import parse_control
from protocol.exceptions import DecodeError
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.records import read_batches
from protocol.wire import ZERO_UUID

from topic_log import TopicsError

log = logging.getLogger("groupbroker.data")
E = ErrorCode
ShareFetch = RESPONSES[ApiKey.SHARE_FETCH].cls
ShareAcknowledge = RESPONSES[ApiKey.SHARE_ACKNOWLEDGE].cls
DescribeOffsets = RESPONSES[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS].cls
_PART = ShareFetch.ShareFetchableTopicResponse.PartitionData
READ_COMMITTED = "read_committed"
#: Kafka's share.coordinator.state.topic.num.partitions
STATE_PARTITIONS = 50


def _ms() -> int:
    return int(time.time() * 1000)


def _valid_member(member_id: str | None) -> bool:
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


class ShareDelivery:
    """The share-partitions of this broker, its share sessions, and the two APIs."""

    def __init__(self, plane, group_configs: Callable[[str], Mapping[str, str]],
                 initialized: Callable[[str], Mapping] = lambda group: {}):
        """``initialized``: a share group's partitions with share state (topic id -> the
        coordinator's record of them), from its group coordinator."""
        self.plane, self.group_configs, self.initialized = plane, group_configs, initialized
        coordinator = plane.config.coordinator
        self.defaults = coordinator
        self.partitions: dict[tuple[str, object, int], SharePartition] = {}
        self.sessions = ShareSessions(coordinator.group_share_max_share_sessions)
        self._locks_changed = trio.Event()
        self._watched: set[object] = set()
        self._nursery: trio.Nursery | None = None
        self.states = ShareStates()
        self._logs: dict[int, ShardLog] = {}
        self.loaded = trio.Event()

    def limits(self, group_id: str) -> Limits:
        """The group's settings over the broker's (Kafka's ShareGroupConfigProvider)."""
        configs, c = self.group_configs(group_id), self.defaults

        def setting(name: str, default: int) -> int:
            return int(configs.get(name, default))
        return Limits(setting("share.delivery.count.limit", c.group_share_delivery_count_limit),
                      setting("share.partition.max.record.locks", c.group_share_partition_max_record_locks),
                      setting("share.record.lock.duration.ms", c.group_share_record_lock_duration_ms),
                      configs.get("share.renew.acknowledge.enable", "true").lower() == "true")

    # --- ShareFetch ---------------------------------------------------------------------------
    async def share_fetch(self, ctx, req):
        await self.loaded.wait()
        v, group = ctx.version, req.group_id
        limits = self.limits(group) if group is not None else Limits()
        if group is None or not _valid_member(req.member_id):
            return ShareFetch(error_code=E.INVALID_REQUEST)
        if v >= 2 and req.is_renew_ack and (req.max_bytes or req.min_bytes or req.max_records or req.max_wait_ms):
            return ShareFetch(error_code=E.INVALID_REQUEST)
        acking = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
        names = {t.topic_id: self.plane.topic_name(t.topic_id) for t in req.topics}
        wanted = [((t.topic_id, p.partition_index), names[t.topic_id]) for t in req.topics for p in t.partitions]
        forgotten = [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions]
        try:
            context = self.sessions.fetch_context(group, req.member_id, req.share_session_epoch, wanted, forgotten,
                                                  acking, ctx.connection)
        except SessionError as e:
            if e.code == E.SHARE_SESSION_LIMIT_REACHED:
                await trio.sleep(max(req.max_wait_ms, 0) / 1000)
            return ShareFetch(error_code=e.code)
        self._watch(ctx)
        acks = self._acknowledge(ctx, group, req.member_id, [
            ((t.topic_id, p.partition_index), names[t.topic_id], p.acknowledgement_batches)
            for t in req.topics for p in t.partitions], v, req.is_renew_ack, settling=True) if acking else {}
        results = []
        try:
            if context.kind != "final" and not (v >= 2 and req.is_renew_ack):
                results = await self._fetch(ctx, req, context.partitions, limits)
        finally:
            for key in acks:
                sp = self.partitions.get((group, *key))
                if sp is not None:
                    sp.settle()
        answered = self.sessions.answered(context, results)
        if answered is None:
            return ShareFetch(error_code=E.INVALID_SHARE_SESSION_EPOCH,
                              acquisition_lock_timeout_ms=limits.lock_duration_ms)
        by_key = {(topic_id, p.partition_index): (topic_id, p) for topic_id, p in answered}
        for key, (code, message) in acks.items():
            if key in by_key:
                topic_id, p = by_key[key]
                by_key[key] = (topic_id, dataclasses.replace(p, acknowledge_error_code=code,
                                                             acknowledge_error_message=message))
            else:
                by_key[key] = (key[0], _PART(partition_index=key[1], error_code=E.NONE, records=b"",
                                             acknowledge_error_code=code, acknowledge_error_message=message))
        if req.share_session_epoch == FINAL_EPOCH:
            self._release(group, req.member_id)
        endpoints: dict = {}
        topics: dict = {}
        for topic_id, p in by_key.values():
            if p.error_code in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH):
                name = self.plane.topic_name(topic_id)
                if name is not None:
                    p = dataclasses.replace(p, current_leader=_PART.LeaderIdAndEpoch(
                        **self.plane._leader_hint(name, p.partition_index, endpoints, ctx.listener)))
            topics.setdefault(topic_id, []).append(p)
        return ShareFetch(error_code=E.NONE, acquisition_lock_timeout_ms=limits.lock_duration_ms, responses=tuple(
            ShareFetch.ShareFetchableTopicResponse(topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
            node_endpoints=tuple(ShareFetch.NodeEndpoint(**fields) for fields in endpoints.values()))

    async def _fetch(self, ctx, req, partitions, limits: Limits) -> list:
        """Acquire records of the session's partitions, parking until there are some, an error,
        or max_wait_ms; (key, has records, error, (topic id, PartitionData)) each."""
        refused, interested = [], []
        for key, name in partitions:
            if name is None:
                error = E.UNKNOWN_TOPIC_ID
            elif self.plane.may_read is not None and not self.plane.may_read(ctx, name):
                error = E.TOPIC_AUTHORIZATION_FAILED
            elif not self.plane.has_partition(name, key[1]):
                error = E.UNKNOWN_TOPIC_OR_PARTITION
            else:
                interested.append((key, name))
                continue
            refused.append((key, False, error, (key[0], _PART(partition_index=key[1], error_code=error, records=b""))))
        if not interested or req.max_records <= 0 or req.max_bytes <= 0:
            return refused
        max_bytes = min(req.max_bytes, self.plane.config.fetch_max_bytes)
        min_bytes = min(req.min_bytes, max_bytes)
        deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
        while True:
            results, size, failed = self._acquire(ctx, req, interested, max_bytes, limits)
            if size >= min_bytes and (size or min_bytes == 0) or failed or trio.current_time() >= deadline:
                return results + refused
            with self.plane.parked.park([name_p for name_p in ((n, k[1]) for k, n in interested)]) as waiter:
                with trio.move_on_at(deadline):
                    await waiter.wait()

    def _acquire(self, ctx, req, interested, max_bytes: int, limits: Limits):
        group, member = req.group_id, req.member_id
        committed = self.group_configs(group).get("share.isolation.level") == READ_COMMITTED
        per_partition = max(1, max_bytes // len(interested))
        left, size, failed, results = req.max_records, 0, False, []
        for key, name in interested:
            part = _PART(partition_index=key[1], error_code=E.NONE, records=b"")
            try:
                log_ = self.plane.led(ctx, name, key[1])
                sp = self._partition(group, key, log_)
                acquired, records = [], b""
                if left > 0 and sp.can_acquire(limits):
                    offset = max(sp.next_fetch_offset(), log_.log_start_offset)
                    high = log_.last_stable_offset if committed else log_.high_watermark
                    if offset < high:
                        records = log_.read(offset, per_partition, upto=high, one_segment=True)
                        headers = read_batches(records, verify_crc=False) if records else []
                        fetched = [_log_batch(h, records) for h in headers]
                        aborted = [(a.producer_id, a.first_offset) for a in log_.transactions.aborted_between(
                            offset, fetched[-1].last_offset + 1)] if committed and fetched else None
                        acquired = sp.acquire(member, fetched, offset, left, req.batch_size, limits, _ms(), aborted)
                        records = _slice(records, headers, acquired)
                if acquired:
                    left -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
                    size += len(records)
                    self._locks_changed.set()
                part = dataclasses.replace(part, records=records, acquired_records=tuple(
                    _PART.AcquiredRecords(first_offset=a.first_offset, last_offset=a.last_offset,
                                          delivery_count=a.delivery_count) for a in acquired))
            except TopicsError as e:
                failed = True
                part = dataclasses.replace(part, error_code=e.error_code)
            results.append((key, bool(part.acquired_records), part.error_code, (key[0], part)))
        return results, size, failed

    def _partition(self, group: str, key, log_) -> SharePartition:
        """The group's share-partition, made at its first fetch from share.auto.offset.reset."""
        sp = self.partitions.get((group, *key))
        if sp is None:
            durable = self.states.read((group, *key))
            start = -1 if durable is None else durable.start_offset
            if start == -1:
                reset = self.group_configs(group).get("share.auto.offset.reset", "latest")
                start = log_.log_start_offset if reset == "earliest" else log_.high_watermark
            sp = self.partitions[(group, *key)] = SharePartition.restored(
                start, [] if durable is None else durable.batches)
        return sp

    # --- ShareAcknowledge ---------------------------------------------------------------------
    async def share_acknowledge(self, ctx, req):
        await self.loaded.wait()
        v, group = ctx.version, req.group_id
        if group is None or not _valid_member(req.member_id):
            return ShareAcknowledge(error_code=E.INVALID_REQUEST)
        try:
            self.sessions.acknowledge(group, req.member_id, req.share_session_epoch)
        except SessionError as e:
            return ShareAcknowledge(error_code=e.code)
        names = {t.topic_id: self.plane.topic_name(t.topic_id) for t in req.topics}
        acks = self._acknowledge(ctx, group, req.member_id, [
            ((t.topic_id, p.partition_index), names[t.topic_id], p.acknowledgement_batches)
            for t in req.topics for p in t.partitions], v, v >= 2 and req.is_renew_ack, keep_empty=False)
        if req.share_session_epoch == FINAL_EPOCH:
            self._release(group, req.member_id)
        endpoints: dict = {}
        topics: dict = {}
        part_cls = ShareAcknowledge.ShareAcknowledgeTopicResponse.PartitionData
        for (topic_id, index), (code, message) in acks.items():
            hint = {}
            if code in (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH) and names.get(topic_id):
                hint = {"current_leader": part_cls.LeaderIdAndEpoch(
                    **self.plane._leader_hint(names[topic_id], index, endpoints, ctx.listener))}
            topics.setdefault(topic_id, []).append(part_cls(partition_index=index, error_code=code,
                                                            error_message=message, **hint))
        return ShareAcknowledge(error_code=E.NONE, acquisition_lock_timeout_ms=self.limits(group).lock_duration_ms,
                                responses=tuple(ShareAcknowledge.ShareAcknowledgeTopicResponse(
                                    topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
                                node_endpoints=tuple(ShareAcknowledge.NodeEndpoint(**f) for f in endpoints.values()))

    def _acknowledge(self, ctx, group: str, member: str, entries, version: int, renew: bool,
                     keep_empty: bool = True, settling: bool = False) -> dict:
        """KafkaApis.handleAcknowledgements: (topic id, partition) -> (error, message)."""
        out, done = {}, {}
        limits = self.limits(group)
        for key, name, batches in entries:
            if name is None:
                out[key] = (E.UNKNOWN_TOPIC_ID, None)
            elif invalid_ack_batches(batches, version, renew):
                out[key] = (E.INVALID_REQUEST, None)
            elif self.plane.may_read is not None and not self.plane.may_read(ctx, name):
                out[key] = (E.TOPIC_AUTHORIZATION_FAILED, None)
            elif not self.plane.has_partition(name, key[1]):
                out[key] = (E.UNKNOWN_TOPIC_OR_PARTITION, None)
            elif not batches:
                done[key] = (E.NONE, None)
            else:
                sp = self.partitions.get((group, *key))
                if sp is None:
                    out[key] = (E.UNKNOWN_TOPIC_OR_PARTITION, None)
                    continue
                try:
                    sp.acknowledge(member, [(b.first_offset, b.last_offset, list(b.acknowledge_types))
                                            for b in batches], limits, _ms(), settling)
                    out[key] = (E.NONE, None) if self._persist(group, key, sp) else (E.UNKNOWN_SERVER_ERROR, None)
                except ShareError as e:
                    out[key] = (e.code, e.message)
                self.plane.parked.appended(name, key[1])
        if any(code == E.NONE for code, _ in out.values()) or keep_empty and out:
            out.update(done)
        return out

    # --- DescribeShareGroupOffsets --------------------------------------------------------------
    async def describe_offsets(self, ctx, req):
        """Each share-partition's start offset and (v1) lag, from its durable state: -1 until a
        first acknowledgement, release or expiry wrote it; all the group's initialized
        partitions when no topics are named (Kafka never checks that the group exists)."""
        await self.loaded.wait()
        image = self.plane.store.metadata_image()
        cls = DescribeOffsets.DescribeShareGroupOffsetsResponseGroup
        topic_cls = cls.DescribeShareGroupOffsetsResponseTopic
        part_cls = topic_cls.DescribeShareGroupOffsetsResponsePartition
        groups = []
        for g in req.groups:
            if g.topics is None:
                asked = sorted(((e.name, sorted(e.partitions)) for e in self.initialized(g.group_id).values()))
            else:
                asked = [(t.topic_name, list(t.partitions)) for t in g.topics]
            known, unknown = [], []
            for name, partitions in asked:
                topic = image.topics.get(name)
                if topic is None:
                    unknown.append(topic_cls(topic_name=name, topic_id=ZERO_UUID, partitions=tuple(
                        part_cls(partition_index=p, start_offset=-1, leader_epoch=0, error_code=E.NONE)
                        for p in partitions)))
                    continue
                known.append(topic_cls(topic_name=name, topic_id=topic.topic_id, partitions=tuple(
                    self._offset_of(g.group_id, name, topic, p, part_cls) for p in partitions)))
            groups.append(cls(group_id=g.group_id, topics=tuple(known + unknown), error_code=E.NONE))
        return DescribeOffsets(groups=tuple(groups))

    def _offset_of(self, group: str, name: str, topic, partition: int, part_cls):
        state = self.states.read((group, topic.topic_id, partition)) if partition < topic.num_partitions else None
        if state is None or state.start_offset == -1:
            return part_cls(partition_index=partition, start_offset=-1, leader_epoch=0, error_code=E.NONE)
        lag = -1
        if state.delivery_complete_count != -1:
            end = self.plane.store.partition(name, partition).high_watermark
            lag = end - state.start_offset - state.delivery_complete_count
        return part_cls(partition_index=partition, start_offset=state.start_offset, leader_epoch=state.leader_epoch,
                        lag=lag, error_code=E.NONE)

    # --- sessions and locks -------------------------------------------------------------------
    def _release(self, group: str, member: str, partitions=None) -> None:
        """A member's session ended: the records it holds go back to its partitions."""
        if partitions is None:
            partitions = self.sessions.release(group, member) or []
        limits = self.limits(group)
        for key in partitions:
            sp = self.partitions.get((group, *key))
            if sp is not None and sp.release_member(member, limits):
                self._persist(group, key, sp)
                name = self.plane.topic_name(key[0])
                if name is not None:
                    self.plane.parked.appended(name, key[1])

    def _watch(self, ctx) -> None:
        """Release the sessions a connection opened once it closes."""
        connection = ctx.connection
        if connection is None or connection in self._watched or self._nursery is None:
            return
        self._watched.add(connection)

        async def watch():
            try:
                await connection.ended.wait()
            finally:
                self._watched.discard(connection)
                ended = self.sessions.disconnected(connection)
                if ended is not None:
                    self._release(ended[0], ended[1], ended[2])
        self._nursery.start_soon(watch)

    # --- durable state --------------------------------------------------------------------------
    def _open(self, partition: int) -> ShardLog:
        shard_log = self._logs.get(partition)
        if shard_log is None:
            shard_log = self._logs[partition] = ShardLog(
                os.path.join(self.plane.config.data_dir, f"{STATE_TOPIC}-{partition}"))
        return shard_log

    def _load(self) -> None:
        """Replay every ``__share_group_state`` log there is (worker thread)."""
        for partition in range(STATE_PARTITIONS):
            if os.path.isdir(os.path.join(self.plane.config.data_dir, f"{STATE_TOPIC}-{partition}")):
                for _, record in self._open(partition).read_all():
                    try:
                        self.states.replay(*decode(record))
                    except RecordError as e:
                        log.error("%s-%d: a record skipped: %s", STATE_TOPIC, partition, e)

    def _persist(self, group: str, key, sp: SharePartition) -> bool:
        """Append what the share-partition has to make durable; whether that worked."""
        now = _ms()
        state_key = (group, *key)
        try:
            record = self.states.write(state_key, *sp.durable_state(), now)
            self._open(state_partition(state_key, STATE_PARTITIONS)).append([record], now)
        except (LogFailedError, RecordError) as e:
            log.error("group %s: the share state of %s-%d cannot be written: %s", group, key[0], key[1], e)
            return False
        self.states.replay(*decode(record))
        return True

    def close(self) -> None:
        for shard_log in self._logs.values():
            shard_log.close()

    async def lock_loop(self) -> None:
        """Load the durable state, then expire acquisition locks as their deadlines pass and
        watch the connections of share sessions."""
        await trio.to_thread.run_sync(self._load)
        self.loaded.set()
        async with trio.open_nursery() as self._nursery:
            while True:
                deadlines = [d for d in (sp.next_deadline() for sp in self.partitions.values()) if d is not None]
                wait = (min(deadlines) - _ms()) / 1000 if deadlines else 60.0
                self._locks_changed = trio.Event()
                with trio.move_on_after(max(wait, 0)):
                    await self._locks_changed.wait()
                now = _ms()
                for (group, topic_id, index), sp in list(self.partitions.items()):
                    if sp.next_deadline() is not None and sp.next_deadline() <= now \
                            and sp.expire_locks(now, self.limits(group)):
                        self._persist(group, (topic_id, index), sp)
                        name = self.plane.topic_name(topic_id)
                        if name is not None:
                            self.plane.parked.appended(name, index)


def _log_batch(h, records: bytes) -> LogBatch:
    control = h.is_control
    abort = False
    if control:
        try:
            abort = not parse_control(records[h.position:h.position + h.size])[0]
        except DecodeError:
            pass                        # not a marker: a control batch of another kind
    return LogBatch(h.base_offset, h.base_offset + h.last_offset_delta, h.producer_id, h.is_transactional,
                    control, abort)


def _slice(records: bytes, headers, acquired) -> bytes:
    """Kafka's maybeSliceFetchRecords: the whole batches that hold the acquired offsets."""
    if not acquired or len(headers) <= 1:
        return records if acquired else b""
    first, last = acquired[0].first_offset, acquired[-1].last_offset
    start = max((h for h in headers if h.base_offset <= first), key=lambda h: h.base_offset, default=headers[0])
    end = max((h for h in headers if h.base_offset <= last), key=lambda h: h.base_offset)
    return records[start.position:end.position + end.size]
