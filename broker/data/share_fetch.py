"""ShareFetch, ShareAcknowledge and DescribeShareGroupOffsets (KIP-932) on this broker's
share-partitions (:class:`share_partitions.manager.SharePartitionManager`).

The runtime around them: a fetch long-polls like Fetch, woken by appends and by records
released; acquisition locks run out on time (``lock_loop``); a share session ends with its
connection, releasing what its member held. The durable share state is loaded before the first
request is answered.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import trio

from coordinator.events import Event
from coordinator.share.sessions import FINAL_EPOCH, SessionError
from protocol.api_keys import ApiKey
from protocol.error_messages import default_message
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.wire import ZERO_UUID
from share_partitions.manager import SharePartitionManager, now_ms, valid_member

E = ErrorCode
ShareFetch = RESPONSES[ApiKey.SHARE_FETCH].cls
ShareAcknowledge = RESPONSES[ApiKey.SHARE_ACKNOWLEDGE].cls
DescribeOffsets = RESPONSES[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS].cls
AlterOffsets = RESPONSES[ApiKey.ALTER_SHARE_GROUP_OFFSETS].cls
DeleteOffsets = RESPONSES[ApiKey.DELETE_SHARE_GROUP_OFFSETS].cls
_PART = ShareFetch.ShareFetchableTopicResponse.PartitionData
_ACK_PART = ShareAcknowledge.ShareAcknowledgeTopicResponse.PartitionData
_LEADERSHIP = (E.NOT_LEADER_OR_FOLLOWER, E.FENCED_LEADER_EPOCH)
#: ShareFetch v2's ShareAcquireMode: 0 batch_optimized, 1 record_limit
RECORD_LIMIT = 1


class ShareDelivery:
    """``initialized``: a share group's partitions with share state, from its group coordinator."""

    def __init__(self, plane, group_configs: Callable[[str], Mapping[str, str]],
                 initialized: Callable[[str], Mapping] = lambda group: {}, group_call=None, journal=None):
        """``group_call(api_key, version, request)``: a request answered by its group's
        coordinator shard (Alter/DeleteShareGroupOffsets change the group's records there)."""
        self.plane, self.initialized, self.group_call = plane, initialized, group_call
        self.journal = journal              # broker/journal/recorder.py's BrokerJournal, or None
        self.manager = SharePartitionManager(plane.config.data_dir, plane.config.coordinator, group_configs)
        self.loaded = trio.Event()
        self._locks_changed = trio.Event()
        self._watched: set[object] = set()
        self._nursery: trio.Nursery | None = None
        #: share groups whose locks a fault keeps from running out
        self.held: set[str] = set()

    def _may_read(self, ctx) -> Callable[[str], bool]:
        return (lambda name: True) if self.plane.may_read is None else (lambda name: self.plane.may_read(ctx, name))

    def _note(self, event: str, group: str, key, member: str | None = None, **fields) -> None:
        """A share-group event for the journal (deliveries, acknowledgements, expired locks)."""
        if self.journal is not None:
            self.journal.share({"event": event, "group": group, "member": member,
                                "topic": self.plane.topic_name(key[0]), "partition": key[1], **fields})

    def _acknowledged(self, group: str, member: str, keys) -> None:
        for key, tally in self.manager.tallies(group, keys):
            self._note(Event.SHARE_ACKNOWLEDGED, group, key, member, **tally)

    def _woken(self, keys) -> None:
        """Records came back to these partitions: wake the fetches parked on them."""
        for topic_id, index in keys:
            name = self.plane.topic_name(topic_id)
            if name is not None:
                self.plane.parked.appended(name, index)

    # --- ShareFetch ---------------------------------------------------------------------------
    async def share_fetch(self, ctx, req):
        await self.loaded.wait()
        v, group, m = ctx.version, req.group_id, self.manager
        if group is None or not valid_member(req.member_id):
            return ShareFetch(error_code=E.INVALID_REQUEST)
        if v >= 2 and req.is_renew_ack and (req.max_bytes or req.min_bytes or req.max_records or req.max_wait_ms):
            return ShareFetch(error_code=E.INVALID_REQUEST)
        lock_ms = m.limits(group).lock_duration_ms
        acking = any(p.acknowledgement_batches for t in req.topics for p in t.partitions)
        names = {t.topic_id: self.plane.topic_name(t.topic_id) for t in req.topics}
        try:
            context = m.sessions.fetch_context(
                ctx.node_id, group, req.member_id, req.share_session_epoch,
                [((t.topic_id, p.partition_index), names[t.topic_id]) for t in req.topics for p in t.partitions],
                [(t.topic_id, p) for t in req.forgotten_topics_data for p in t.partitions], acking, ctx.connection)
        except SessionError as e:
            if e.code == E.SHARE_SESSION_LIMIT_REACHED:
                await trio.sleep(max(req.max_wait_ms, 0) / 1000)
            return ShareFetch(error_code=e.code)
        self._watch(ctx)
        acks: dict = {}
        keys = [(t.topic_id, p.partition_index) for t in req.topics for p in t.partitions] if acking else []
        starts = m.start_offsets(group, keys)
        if acking:
            acks = m.acknowledge(group, req.member_id, [
                ((t.topic_id, p.partition_index), names[t.topic_id], p.acknowledgement_batches)
                for t in req.topics for p in t.partitions], v, req.is_renew_ack, may_read=self._may_read(ctx),
                exists=self.plane.has_partition, settling=True)
            self._acknowledged(group, req.member_id, acks)
            self._woken(acks)

        def settle() -> bool:
            """The acknowledgement is written: what it released may go again; whether a start
            offset moved (Kafka then completes the waiting fetch at once)."""
            m.settle(group, acks)
            return m.start_offsets(group, keys) != starts
        results = []
        try:
            if context.kind != "final" and not (v >= 2 and req.is_renew_ack):
                results = await self._fetch(ctx, req, context.partitions, settle if acking else None)
        finally:
            m.settle(group, acks)
        answered = m.sessions.answered(context, results)
        if answered is None:
            return ShareFetch(error_code=E.INVALID_SHARE_SESSION_EPOCH, acquisition_lock_timeout_ms=lock_ms)
        by_key = {(topic_id, p.partition_index): (topic_id, p) for topic_id, p in answered}
        for key, (code, message) in acks.items():
            topic_id, p = by_key.get(key, (key[0], _PART(partition_index=key[1], error_code=E.NONE, records=b"")))
            by_key[key] = (topic_id, dataclasses.replace(p, acknowledge_error_code=code,
                                                         acknowledge_error_message=message))
        if req.share_session_epoch == FINAL_EPOCH:
            self._woken(m.end_session(ctx.node_id, group, req.member_id))
        endpoints: dict = {}
        topics: dict = {}
        for topic_id, p in by_key.values():
            if p.error_code in _LEADERSHIP and names.get(topic_id):
                p = dataclasses.replace(p, current_leader=_PART.LeaderIdAndEpoch(
                    **self.plane._leader_hint(names[topic_id], p.partition_index, endpoints, ctx.listener)))
            topics.setdefault(topic_id, []).append(p)
        return ShareFetch(error_code=E.NONE, acquisition_lock_timeout_ms=lock_ms, responses=tuple(
            ShareFetch.ShareFetchableTopicResponse(topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
            node_endpoints=tuple(ShareFetch.NodeEndpoint(**fields) for fields in endpoints.values()))

    async def _fetch(self, ctx, req, partitions, settle: Callable[[], bool] | None = None) -> list:
        """Acquire records of the session's partitions, parking until there are some, an error,
        or max_wait_ms; (key, has records, error, (topic id, PartitionData)) each. ``settle``:
        the request's own acknowledgement completes after the first try, as Kafka's write does
        (what it released is not taken by that try); a moved start offset tries again at once."""
        refused, interested, named = [], [], {}
        may_read = self._may_read(ctx)
        for key, name in partitions:
            error = E.UNKNOWN_TOPIC_ID if name is None else E.TOPIC_AUTHORIZATION_FAILED if not may_read(name) \
                else E.UNKNOWN_TOPIC_OR_PARTITION if not self.plane.has_partition(name, key[1]) else E.NONE
            if error == E.NONE:
                interested.append(key)
                named[key] = name
            else:
                refused.append((key, False, error, (key[0], _PART(partition_index=key[1], error_code=error,
                                                                  records=b""))))
        if not interested or req.max_records <= 0 or req.max_bytes <= 0:
            return refused
        max_bytes = min(req.max_bytes, self.plane.config.fetch_max_bytes)
        min_bytes = min(req.min_bytes, max_bytes)
        deadline = trio.current_time() + max(req.max_wait_ms, 0) / 1000
        open_log = lambda key: self.plane.led(ctx, named[key], key[1])          # noqa: E731
        while True:
            reads, size = self.manager.acquire(req.group_id, req.member_id, interested, open_log, req.max_records,
                                               req.batch_size, max_bytes, req.share_acquire_mode == RECORD_LIMIT)
            for r in reads:
                if r.acquired:
                    self._locks_changed.set()
                    self._note(Event.SHARE_DELIVERED, req.group_id, r.key, req.member_id,
                               records=sum(a.last_offset - a.first_offset + 1 for a in r.acquired),
                               redelivered=sum(a.last_offset - a.first_offset + 1 for a in r.acquired
                                               if a.delivery_count > 1))
            failed = any(r.error for r in reads)
            done = size >= min_bytes and (size or min_bytes == 0) or failed or trio.current_time() >= deadline
            if not done and settle is not None:
                moved, settle = settle(), None
                if moved:
                    continue
            if done:
                return [(r.key, bool(r.acquired), r.error, (r.key[0], _PART(
                    partition_index=r.key[1], error_code=r.error, records=r.records, acquired_records=tuple(
                        _PART.AcquiredRecords(first_offset=a.first_offset, last_offset=a.last_offset,
                                              delivery_count=a.delivery_count) for a in r.acquired))))
                        for r in reads] + refused
            with self.plane.parked.park([(named[k], k[1]) for k in interested]) as waiter:
                with trio.move_on_at(deadline):
                    await waiter.wait()

    # --- ShareAcknowledge ---------------------------------------------------------------------
    async def share_acknowledge(self, ctx, req):
        await self.loaded.wait()
        v, group, m = ctx.version, req.group_id, self.manager
        if group is None or not valid_member(req.member_id):
            return ShareAcknowledge(error_code=E.INVALID_REQUEST)
        try:
            m.sessions.acknowledge(ctx.node_id, group, req.member_id, req.share_session_epoch)
        except SessionError as e:
            return ShareAcknowledge(error_code=e.code)
        names = {t.topic_id: self.plane.topic_name(t.topic_id) for t in req.topics}
        acks = m.acknowledge(group, req.member_id, [
            ((t.topic_id, p.partition_index), names[t.topic_id], p.acknowledgement_batches)
            for t in req.topics for p in t.partitions], v, v >= 2 and req.is_renew_ack,
            may_read=self._may_read(ctx), exists=self.plane.has_partition, keep_empty=False)
        self._acknowledged(group, req.member_id, acks)
        self._woken(acks)
        if req.share_session_epoch == FINAL_EPOCH:
            self._woken(m.end_session(ctx.node_id, group, req.member_id))
        endpoints: dict = {}
        topics: dict = {}
        for (topic_id, index), (code, message) in acks.items():
            hint = {}
            if code in _LEADERSHIP and names.get(topic_id):
                hint = {"current_leader": _ACK_PART.LeaderIdAndEpoch(
                    **self.plane._leader_hint(names[topic_id], index, endpoints, ctx.listener))}
            topics.setdefault(topic_id, []).append(_ACK_PART(partition_index=index, error_code=code,
                                                             error_message=message, **hint))
        return ShareAcknowledge(error_code=E.NONE, acquisition_lock_timeout_ms=m.limits(group).lock_duration_ms,
                                responses=tuple(ShareAcknowledge.ShareAcknowledgeTopicResponse(
                                    topic_id=t, partitions=tuple(ps)) for t, ps in topics.items()),
                                node_endpoints=tuple(ShareAcknowledge.NodeEndpoint(**f) for f in endpoints.values()))

    # --- DescribeShareGroupOffsets --------------------------------------------------------------
    async def describe_offsets(self, ctx, req):
        """Each share-partition's start offset and (v1) lag (Kafka never checks that the group
        exists)."""
        await self.loaded.wait()
        cls = DescribeOffsets.DescribeShareGroupOffsetsResponseGroup
        topic_cls = cls.DescribeShareGroupOffsetsResponseTopic
        part_cls = topic_cls.DescribeShareGroupOffsetsResponsePartition
        image = self.plane.store.metadata_image()

        def high_watermark(name: str, partition: int) -> int:
            return self.plane.store.partition(name, partition).high_watermark
        groups = []
        for g in req.groups:
            topics = None if g.topics is None else [(t.topic_name, list(t.partitions)) for t in g.topics]
            rows = self.manager.offsets(g.group_id, topics, image, self.initialized(g.group_id), high_watermark)
            groups.append(cls(group_id=g.group_id, error_code=E.NONE, topics=tuple(
                topic_cls(topic_name=name, topic_id=topic_id or ZERO_UUID, partitions=tuple(
                    part_cls(partition_index=p, start_offset=start, leader_epoch=epoch, lag=lag, error_code=E.NONE)
                    for p, start, epoch, lag in parts))
                for name, topic_id, parts in rows)))
        return DescribeOffsets(groups=tuple(groups))

    # --- Alter/DeleteShareGroupOffsets -----------------------------------------------------------
    async def alter_offsets(self, ctx, req):
        """KafkaApis' checks of each topic, the group coordinator's of the group (empty, a share
        group or none), then the new share state written for the partitions it accepted."""
        await self.loaded.wait()
        may_read, refused, kept = self._may_read(ctx), [], []
        topic_cls = AlterOffsets.AlterShareGroupOffsetsResponseTopic
        for t in req.topics:
            error = E.TOPIC_AUTHORIZATION_FAILED if not may_read(t.topic_name) else \
                E.UNKNOWN_TOPIC_OR_PARTITION if not self.plane.topic_exists(t.topic_name) else E.NONE
            if error == E.NONE:
                kept.append(t)
                continue
            refused.append(topic_cls(topic_name=t.topic_name, topic_id=self._topic_id(t.topic_name), partitions=tuple(
                topic_cls.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=error, error_message=default_message(error))
                for p in t.partitions)))
        answer = await self.group_call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, ctx.version,
                                       dataclasses.replace(req, topics=tuple(kept)))
        if answer.error_code != E.NONE:
            return _whole(answer)
        offsets = {(t.topic_name, p.partition_index): p.start_offset for t in kept for p in t.partitions}
        for t in answer.responses:
            for p in t.partitions:
                if p.error_code == E.NONE:
                    self.manager.reset(req.group_id, (t.topic_id, p.partition_index),
                                       offsets[(t.topic_name, p.partition_index)])
        return dataclasses.replace(answer, responses=tuple(refused) + answer.responses)

    async def delete_offsets(self, ctx, req):
        await self.loaded.wait()
        may_read, refused, kept = self._may_read(ctx), [], []
        topic_cls = DeleteOffsets.DeleteShareGroupOffsetsResponseTopic
        for t in req.topics:
            if may_read(t.topic_name):
                kept.append(t)
            else:
                refused.append(topic_cls(topic_name=t.topic_name, topic_id=ZERO_UUID,
                                         error_code=E.TOPIC_AUTHORIZATION_FAILED,
                                         error_message=default_message(E.TOPIC_AUTHORIZATION_FAILED)))
        answer = await self.group_call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, ctx.version,
                                       dataclasses.replace(req, topics=tuple(kept)))
        if answer.error_code != E.NONE:
            return _whole(answer)
        image = self.plane.store.metadata_image()
        for t in answer.responses:
            topic = image.by_id.get(t.topic_id)
            if t.error_code == E.NONE and topic is not None:
                for p in range(topic.num_partitions):
                    self.manager.reset(req.group_id, (t.topic_id, p), None)
        return dataclasses.replace(answer, responses=tuple(refused) + answer.responses)

    def initialize_state(self, group: str, partitions: dict) -> None:
        """The group coordinator initialized these partitions of a share group: new share state,
        from the group's share.auto.offset.reset (a group deleted and made again, a topic's new
        partitions, offsets deleted: each starts afresh, as in Kafka)."""
        for topic_id, indexes in partitions.items():
            for index in indexes:
                self.manager.reset(group, (topic_id, index), -1)

    def leader_changed(self, topic: str, partition: int) -> None:
        """The partition has a new leader, which starts its share-partitions from the share
        state, as Kafka's new leader loads them from its share coordinator."""
        self.manager.forget(self._topic_id(topic), partition)

    def _topic_id(self, name: str):
        topic = self.plane.store.metadata_image().topics.get(name)
        return ZERO_UUID if topic is None else topic.topic_id

    # --- sessions and locks -------------------------------------------------------------------
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
                self._woken(self.manager.disconnected(connection))
        self._nursery.start_soon(watch)

    def expire_locks(self, group: str) -> int:
        """Fault injection: every lock of the group runs out now; how many partitions changed."""
        return len(self._expired(self.manager.expire(2**62, groups={group})))

    def _expired(self, changed: list) -> list:
        for group, key, records, archived in changed:
            self._note(Event.SHARE_LOCKS_EXPIRED, group, key, records=records, archived=archived)
        self._woken([key for _, key, _, _ in changed])
        return changed

    def hold_locks(self, group: str, hold: bool) -> None:
        (self.held.add if hold else self.held.discard)(group)
        self._locks_changed.set()

    def close(self) -> None:
        self.manager.close()

    async def lock_loop(self) -> None:
        """Load the durable state, then expire acquisition locks as their deadlines pass and
        watch the connections of share sessions."""
        await trio.to_thread.run_sync(self.manager.load)
        self.loaded.set()
        async with trio.open_nursery() as self._nursery:
            while True:
                deadline = self.manager.next_deadline(skip=self.held)
                self._locks_changed = trio.Event()
                with trio.move_on_after(60.0 if deadline is None else max((deadline - now_ms()) / 1000, 0)):
                    await self._locks_changed.wait()
                self._expired(self.manager.expire(now_ms(), skip=self.held))


def _whole(answer):
    """A group coordinator's refusal as KafkaApis sends it: the error alone, with the error's own
    message when the coordinator gave none."""
    return dataclasses.replace(answer, responses=(),
                               error_message=answer.error_message or default_message(answer.error_code))
