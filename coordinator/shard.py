"""One coordinator shard: the groups and offsets of one ``__consumer_offsets`` partition.

The front of the shard (Kafka's GroupCoordinatorShard): it owns the shard's timers and its
managers — the classic group protocol (:mod:`coordinator.classic`) and the committed offsets
(:mod:`coordinator.offsets`) — and sends each request to the manager that answers its API.
Pure logic, driven from outside:

* ``handle(now, ctx, request)`` answers one group-API request;
* ``tick(now)`` fires the timers that are due (session, join, sync, pending member, sweep);
* ``replay(record)`` rebuilds state from the offsets log, then ``loaded(now)`` arms timers.

Each operation returns a :class:`~coordinator.result.CoordinatorResult`: the records to
persist, the replies, the journal events, in the order the driver carries them out. Time is
milliseconds, passed in; nothing here reads a clock, touches a file or a socket. A new group
type is a new manager beside the classic one, sharing the timers, the offsets and the result.
"""

from __future__ import annotations

import logging
import uuid
from collections import ChainMap
from functools import partial
from typing import Callable, Mapping

from offsets_log.records import (SHARE_GROUP_KEYS, STREAMS_GROUP_KEYS, GroupMetadata, GroupMetadataTombstone,
                                 GroupRecord, OffsetCommit, OffsetCommitTombstone, TransactionMarker, TypedRecord)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe

from coordinator import group_admin, responses
from coordinator.actions import RequestContext
from coordinator.classic import membership
from coordinator.classic.group import ClassicGroup
from coordinator.classic.state import GroupState as ClassicState
from coordinator.classic.manager import ClassicGroupManager
from coordinator.config import CoordinatorConfig
from coordinator.consumer import classic_members
from coordinator.consumer.manager import ConsumerGroupManager
from coordinator.interventions import InterventionError
from coordinator.metadata import MetadataImage
from coordinator.offsets import CommittedOffset, OffsetManager
from coordinator.result import CoordinatorResult, StepFailed
from coordinator.routing import shard_for
from coordinator.share.manager import ShareGroupManager
from coordinator.streams.manager import StreamsGroupManager
from coordinator.timers import Timers

log = logging.getLogger("groupbroker.coordinator")


class Shard:
    def __init__(self, shard_id: int, config: CoordinatorConfig | None = None, *,
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()), journal: bool = False):
        self.shard_id = shard_id
        self.journal = journal          # collect journal events (coordinator/events.py)
        self._config = config = config or CoordinatorConfig()
        self.new_uuid = new_uuid
        self.timers = Timers()
        self.classic = ClassicGroupManager(shard_id, config, self.timers, new_uuid)
        self.share = ShareGroupManager(shard_id, config, self.timers, self._other_than("share"))
        self.streams = StreamsGroupManager(shard_id, config, self.timers, self.classic, self._other_than("streams"))
        self.consumer = ConsumerGroupManager(shard_id, config, self.timers, self.classic,
                                             ChainMap(self.share.groups, self.streams.groups))
        self.offset_manager = OffsetManager(config, self.classic, self.consumer, self.timers, self.share,
                                            self.streams)
        classic, consumer, share, offsets = self.classic, self.consumer, self.share, self.offset_manager
        streams = self.streams
        self._handlers = {
            ApiKey.STREAMS_GROUP_HEARTBEAT: streams.heartbeat,
            ApiKey.STREAMS_GROUP_DESCRIBE: streams.describe,
            ApiKey.SHARE_GROUP_HEARTBEAT: share.heartbeat,
            ApiKey.SHARE_GROUP_DESCRIBE: share.describe,
            ApiKey.ALTER_SHARE_GROUP_OFFSETS: share.alter_offsets,
            ApiKey.DELETE_SHARE_GROUP_OFFSETS: share.delete_offsets,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer.heartbeat,
            ApiKey.CONSUMER_GROUP_DESCRIBE: consumer.describe,
            ApiKey.JOIN_GROUP: self._join_group,
            ApiKey.SYNC_GROUP: partial(self._classic_api, membership.sync_group, classic_members.sync),
            ApiKey.HEARTBEAT: partial(self._classic_api, membership.heartbeat, classic_members.heartbeat),
            ApiKey.LEAVE_GROUP: partial(self._classic_api, membership.leave_group, classic_members.leave),
            ApiKey.OFFSET_COMMIT: offsets.offset_commit,
            ApiKey.TXN_OFFSET_COMMIT: offsets.txn_offset_commit,
            ApiKey.OFFSET_FETCH: offsets.offset_fetch,
            ApiKey.OFFSET_DELETE: offsets.offset_delete,
            ApiKey.DESCRIBE_GROUPS: partial(group_admin.describe_groups, classic, consumer, share, streams),
            ApiKey.LIST_GROUPS: partial(group_admin.list_groups, classic, consumer, share, streams),
            ApiKey.DELETE_GROUPS: partial(group_admin.delete_groups, classic, consumer, share, streams, offsets),
        }

    @property
    def config(self) -> CoordinatorConfig:
        return self._config

    @config.setter
    def config(self, config: CoordinatorConfig) -> None:
        """A new configuration applies to every manager at once (a config change)."""
        self._config = self.classic.config = self.offset_manager.config = config
        self.consumer.config = self.share.config = self.streams.config = config

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        return self.classic.groups

    @property
    def offsets(self) -> dict[str, dict[tuple[str, int], CommittedOffset]]:
        return self.offset_manager.offsets

    def on_metadata(self, image: MetadataImage) -> None:
        """The topics changed (or the broker started): consumer groups see the new image."""
        self.consumer.on_metadata(image)
        self.share.on_metadata(image)
        self.streams.on_metadata(image)

    def on_group_configs(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        """The dynamic group configs (group id -> name -> value) changed, or the broker started:
        consumer groups read their heartbeat interval, session timeout and assignment interval
        from them."""
        self.consumer.group_configs = self.share.group_configs = self.streams.group_configs = configs

    def _type_of(self, group_id: str) -> str | None:
        """The type of the live group named ``group_id``, if any."""
        for kind, manager in (("consumer", self.consumer), ("share", self.share), ("streams", self.streams)):
            if group_id in manager.groups:
                return kind
        group = self.classic.groups.get(group_id)
        return "classic" if group is not None and not group.is_in(ClassicState.DEAD) else None

    def _other_than(self, kind: str) -> Callable[[str], str | None]:
        """The type of the live group named ``group_id`` if it is not of ``kind``."""
        def other(group_id: str) -> str | None:
            found = self._type_of(group_id)
            return found if found != kind else None
        return other

    def _join_group(self, out: CoordinatorResult, now: int, ctx: RequestContext, req) -> None:
        """Kafka's classicGroupJoin: a JoinGroup naming a consumer group with members joins it
        as a classic member; an empty consumer group gives way to a classic group; the id of a
        share group is refused."""
        streams = self.streams.groups.get(req.group_id)
        if req.group_id in self.share.groups or (streams is not None and not streams.is_empty()):
            out.reply(ctx.token, ApiKey.JOIN_GROUP, ctx.version,
                      responses.join(ctx.version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return
        if streams is not None:
            log.info("group %s: the empty streams group is replaced by a classic group", safe(req.group_id))
            self.streams.apply(out, self.streams.delete_records(streams))
        group = self.consumer.groups.get(req.group_id)
        if group is not None:
            cfg = self.config
            if not group.is_empty() and \
                    cfg.group_min_session_timeout_ms <= req.session_timeout_ms <= cfg.group_max_session_timeout_ms:
                classic_members.join(self.consumer, out, now, ctx, req, group)
                return
            if group.is_empty():
                log.info("group %s: the empty consumer group is replaced by a classic group",
                         safe(req.group_id))
                self.consumer.apply(out, self.consumer.delete_records(group))
        membership.join_group(self.classic, out, now, ctx, req)

    def _classic_api(self, for_classic: Callable, for_consumer: Callable, out: CoordinatorResult,
                     now: int, ctx: RequestContext, req) -> None:
        """SyncGroup, Heartbeat and LeaveGroup go to the group of whichever type it is."""
        group = self.consumer.groups.get(req.group_id)
        if group is None:
            for_classic(self.classic, out, now, ctx, req)
        else:
            for_consumer(self.consumer, out, now, ctx, req, group)

    def result(self) -> CoordinatorResult:
        """An empty result for one operation of this shard."""
        return CoordinatorResult(self.shard_id, self.journal, self._config.message_max_bytes)

    # --- driving ---------------------------------------------------------------------------
    def handle(self, now: int, ctx: RequestContext, request) -> CoordinatorResult:
        out = self.result()
        try:
            self._handlers[ctx.api_key](out, now, ctx, request)
        except Exception as e:       # the driver answers what was decided and reloads the shard
            raise StepFailed(out) from e
        return out

    def intervene(self, now: int, fault: Callable, *args) -> tuple[object, CoordinatorResult]:
        """Apply a fault from coordinator/interventions.py: its outcome and its result. A fault
        that does not apply raises InterventionError before it changes anything."""
        out = self.result()
        try:
            return fault(self, out, now, *args), out
        except InterventionError:
            raise
        except Exception as e:       # the driver answers what was decided and reloads the shard
            raise StepFailed(out) from e

    def tick(self, now: int) -> CoordinatorResult:
        """Fire every timer due at ``now``, earliest first."""
        out = self.result()
        try:
            for fire in self.timers.due(now):
                fire(out, now)
        except Exception as e:       # the driver answers what was decided and reloads the shard
            raise StepFailed(out) from e
        return out

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def armed_before(self, deadline: float) -> bool:
        """A timer armed since :meth:`next_deadline` is due before ``deadline`` (ms)."""
        return self.timers.armed_before(deadline)

    def forget_topics(self, topics: set[str]) -> CoordinatorResult:
        """Drop the committed offsets of deleted topics (tombstones), as Kafka does on deletion."""
        return self._run(self.offset_manager.forget_topics, topics)

    def complete_transaction(self, now: int, producer_id: int, producer_epoch: int, commit: bool,
                             coordinator_epoch: int) -> CoordinatorResult:
        """The transaction coordinator's marker: a producer's pending offsets committed or dropped."""
        return self._run(self.offset_manager.complete_transaction, now, producer_id, producer_epoch,
                         commit, coordinator_epoch)

    def fresh(self) -> Shard:
        """An empty shard like this one: what reloading from the log starts from."""
        shard = type(self)(self.shard_id, self.config, new_uuid=self.new_uuid, journal=self.journal)
        shard.on_metadata(self.consumer.image)
        shard.on_group_configs(self.consumer.group_configs)
        return shard

    def unload(self) -> CoordinatorResult:
        """Give up this state (Kafka's onUnloaded): every parked JoinGroup and SyncGroup is
        answered NOT_COORDINATOR, every group is Dead, no timer fires any more."""
        out = self.result()
        self.classic.unload(out)
        self.consumer.unload()
        self.share.unload()
        self.streams.unload()
        self.timers.clear()
        return out

    def owns(self, group_id: str) -> bool:
        return shard_for(group_id, self.config.offsets_topic_num_partitions) == self.shard_id

    def _run(self, operation: Callable, *args) -> CoordinatorResult:
        out = self.result()
        try:
            operation(out, *args)
        except Exception as e:       # the driver answers what was decided and reloads the shard
            raise StepFailed(out) from e
        return out

    # --- replay ----------------------------------------------------------------------------
    def replay(self, record: TypedRecord) -> None:
        """Apply one log record (GroupMetadataManager/OffsetMetadataManager.replay).

        Live offset writes pass through here too (the managers replay their own records).
        """
        if isinstance(record, (OffsetCommit, OffsetCommitTombstone, TransactionMarker)):
            self.offset_manager.replay(record)
        elif isinstance(record, (GroupMetadata, GroupMetadataTombstone)):
            self.classic.replay(record)
        elif isinstance(record, GroupRecord):
            manager = self.share if record.type in SHARE_GROUP_KEYS else \
                self.streams if record.type in STREAMS_GROUP_KEYS else self.consumer
            manager.replay(record)

    def loaded(self, now: int) -> CoordinatorResult:
        """After replay: members come back Stable with fresh session timers; start the sweep."""
        out = self.result()
        self.classic.loaded(out, now)
        self.consumer.loaded(now)
        self.share.loaded(now)
        self.streams.loaded(now)
        self.offset_manager.loaded(now)
        return out
