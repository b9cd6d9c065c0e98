"""The data APIs around a group: Metadata, Produce, Fetch, ListOffsets, Create/DeleteTopics, DescribeProducers.

All run in the trio thread against one :class:`topic_log.TopicStore` (appends are plain
buffered writes, as Kafka's are: durability of topic data comes from the page cache, not an
fsync per request). Fetch long-polls, parked under its partitions until ``min_bytes`` are
available, ``max_wait_ms`` passes or its client hangs up; an answer never carries more than
``fetch.max.bytes``. A request that fails as a whole gets Kafka's error answer for it, never a
closed connection.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections import Counter
from functools import partial
from typing import Awaitable, Callable, NamedTuple

import trio

from coordinator.java_order import hash_map_order, long_map_order
from protocol.api_keys import ApiKey
from protocol.error_messages import default_message
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.records import BatchHeader, read_batches
from protocol.exceptions import DecodeError
from protocol.wire import ZERO_UUID

from topic_log import (CorruptRecords, FencedLeaderEpoch, InvalidTopic, MessageTooLarge, NotLeader,
                       StorageError, TopicsError, TopicStore, UnknownLeaderEpoch,
                       UnknownTopicOrPartition, validate_topic_name)
from topic_log import configs as topic_configs
from topic_log.compaction import LogCleaner
from topic_log.configs import InvalidConfig

from broker.cluster.topology import GROUP_TOPIC, NO_LEADER, TXN_TOPIC, Topology
from broker.data.cluster_admin import CLUSTER_OPERATIONS, ClusterAdmin
from broker.config import BrokerConfig
from broker.data.config_apis import ConfigApis
from broker.data.errors import (EXCESSIVE_BATCH, MAX_PARTITIONS_PER_BATCH, MAX_RECORDS_PER_USER_OP, each_partition,
                                error_message)
from broker.data.errors import Refused as _Refused
from broker.data.fetch_sessions import FetchSessions
from broker.data.parked_fetches import ParkedFetches
from broker.data.share_fetch import ShareDelivery
from broker.data.topic_admin import TopicAdmin
from broker.data.txn_markers import write_txn_markers

log = logging.getLogger("groupbroker.data")
E = ErrorCode
UNSET_OPERATIONS = -2147483648
#: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (no ACLs here)
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -1, -2, -3, -4, -5, -6
#: ListOffsets' special timestamps and the first version that may ask each (Kafka's
#: ReplicaManager.timestampMinSupportedVersion); another negative one is UNSUPPORTED_VERSION
SPECIAL_TIMESTAMPS = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                      EARLIEST_PENDING_UPLOAD: 11}
#: what there is in remote storage: nothing here (UnifiedLog without tiered storage)
_NOTHING_TIERED = (LATEST_TIERED, EARLIEST_PENDING_UPLOAD)
READ_COMMITTED = 1
#: the transaction coordinator out of reach, as a produce's verification finds it
_UNREACHABLE = frozenset({E.NETWORK_EXCEPTION, E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                          E.NOT_COORDINATOR})
#: the first Produce version of transaction version 2 (the leader adds partitions itself)
TV2_PRODUCE = 12
#: the verification errors Kafka's ReplicaManager answers with a message of its own
_VERIFICATION_MESSAGES = (E.INVALID_TXN_STATE, E.NOT_ENOUGH_REPLICAS)
#: Kafka's internal topics (Topic.isInternal); the first two are the coordinators' logs here
INTERNAL_TOPIC_NAMES = frozenset({GROUP_TOPIC, TXN_TOPIC, "__share_group_state"})

Metadata = RESPONSES[ApiKey.METADATA].cls
Produce = RESPONSES[ApiKey.PRODUCE].cls
Fetch = RESPONSES[ApiKey.FETCH].cls
ListOffsets = RESPONSES[ApiKey.LIST_OFFSETS].cls
CreateTopics = RESPONSES[ApiKey.CREATE_TOPICS].cls
DeleteTopics = RESPONSES[ApiKey.DELETE_TOPICS].cls
DescribeProducers = RESPONSES[ApiKey.DESCRIBE_PRODUCERS].cls
OffsetForLeaderEpoch = RESPONSES[ApiKey.OFFSET_FOR_LEADER_EPOCH].cls
UNDEFINED_EPOCH = -1


def _now_ms() -> int:
    return int(time.time() * 1000)


class DataPlane:
    def __init__(self, config: BrokerConfig, topology: Topology,
                 on_topics_deleted: Callable[[set[str]], None] = lambda names: None,
                 group_marker: Callable[..., Awaitable[ErrorCode]] | None = None,
                 share_partitions: Callable[[str], dict] = lambda group: {}, group_call=None,
                 journal=None):
        self.config, self.topology = config, topology
        self.on_topics_deleted = on_topics_deleted
        self.store = TopicStore(config.data_dir, num_partitions=config.num_partitions,
                                auto_create=config.auto_create_topics_enable, broker_props=config.props,
                                replication_factor=config.default_replication_factor)
        topology.replication = self.replication_of
        self.cleaner = LogCleaner(config.data_dir)
        self.parked = ParkedFetches()
        self.fetch_sessions = FetchSessions()
        #: (ctx, topic) -> whether the client may READ the topic, when ACLs are enforced (set by
        #: the broker): checked at each Fetch for every partition it reads, as Kafka does
        self.may_read: Callable[[object, str], bool] | None = None
        self.topic_admin = TopicAdmin(self.store, config, topology.node_ids, self.led)
        self.cluster_admin = ClusterAdmin(self.store, config, topology)
        self.config_apis = ConfigApis(self.store, config, topology.node_ids)
        self.write_txn_markers = partial(write_txn_markers, self, group_marker)
        self.share = ShareDelivery(self, lambda group: self.config_apis.dynamic.scope("groups").get(group, {}),
                                   share_partitions, group_call, journal)
        #: (transactional id, producer id, epoch, topic, partition) -> ErrorCode: the transaction
        #: coordinator's check of a transactional produce (set by the broker)
        self.verify_transaction: Callable | None = None
        #: async (transactional id, producer id, epoch, [(topic, partition)]) -> ErrorCode: the
        #: transaction coordinator's add of a transaction version 2 produce's partitions
        self.add_to_transaction: Callable | None = None
        #: (topic, partition) -> [(leader epoch, its start offset)] after epoch 0 (from offset 0):
        #: Kafka's leader-epoch cache, one entry each time a node becomes leader
        self.epoch_starts: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def replication_of(self, topic: str) -> int:
        """A topic's replication factor: its own, or the internal topics' settings."""
        if topic == GROUP_TOPIC:
            return self.config.offsets_topic_replication_factor
        if topic == TXN_TOPIC:
            return self.config.transaction_state_log_replication_factor
        try:
            return self.store.topic(topic).replication_factor
        except UnknownTopicOrPartition:
            return self.config.default_replication_factor

    def led(self, ctx, topic: str, partition: int, current_epoch: int = -1):
        """The partition's log, if the node asked leads it, in Kafka's order of checks
        (ReplicaManager.getPartitionOrError, Partition.getLocalLog): UNKNOWN_TOPIC_OR_PARTITION;
        NOT_LEADER_OR_FOLLOWER from a node holding no replica; the client's current leader
        epoch (-1: not given) against the partition's, FENCED_LEADER_EPOCH or
        UNKNOWN_LEADER_EPOCH; NOT_LEADER_OR_FOLLOWER from a follower."""
        log_ = self.store.partition(topic, partition)
        if self.topology.single and current_epoch in (-1, 0):
            return log_                   # one node leads everything, at epoch 0
        lead = self.topology.of(topic, partition)
        node = ctx.node_id if not self.topology.single else lead.leader
        if node not in lead.replicas:
            raise NotLeader(f"node {node} holds no replica of {topic}-{partition}")
        if current_epoch != -1 and current_epoch != lead.epoch:
            raise (FencedLeaderEpoch if current_epoch < lead.epoch else UnknownLeaderEpoch)(
                f"{topic}-{partition}: leader epoch {current_epoch} asked, {lead.epoch} current")
        if lead.leader != node:
            raise NotLeader(f"node {node} does not lead {topic}-{partition}")
        return log_

    def _leader_hint(self, topic: str, partition: int, endpoints: dict, listener: str) -> dict:
        """KIP-951: the partition's current leader for a NOT_LEADER_OR_FOLLOWER answer, its
        endpoint added to ``endpoints`` (node id -> NodeEndpoint fields)."""
        lead = self.topology.of(topic, partition)
        if lead.leader != NO_LEADER:
            node = self.topology.node(lead.leader, listener)
            endpoints[node.node_id] = dict(node_id=node.node_id, host=node.host, port=node.port, rack=node.rack)
        return dict(leader_id=lead.leader, leader_epoch=lead.epoch)

    def topic_name(self, topic_id) -> str | None:
        """The name of the topic with this id (None if there is none); a lookup in the store's
        current metadata image, since every Produce from v13 asks it for each topic."""
        found = self.store.metadata_image().by_id.get(topic_id)
        return None if found is None else found.name

    def topic_exists(self, name: str) -> bool:
        try:
            self.store.topic(name)
        except TopicsError:
            return False
        return True

    def has_partition(self, topic: str, partition: int) -> bool:
        try:
            self.store.partition(topic, partition)
        except TopicsError:
            return False
        return True

    def close(self) -> None:
        self.share.close()
        self.cleaner.stop()
        self.store.flush()
        self.store.close()

    # --- Metadata --------------------------------------------------------------------------
    async def metadata(self, ctx, req):
        """Kafka's handleTopicMetadataRequest: each topic once, those that exist first, then the
        others (invalid names INVALID_TOPIC_EXCEPTION, the rest UNKNOWN_TOPIC_OR_PARTITION, also
        when this request auto-creates them); a request naming any topic by id (v12+) is answered
        for its ids alone, the unknown ones first."""
        v = ctx.version
        wanted = req.topics
        if v < 12 and wanted and any(t.name is None or t.topic_id != ZERO_UUID for t in wanted):
            # Kafka's handleTopicMetadataRequest: topic ids (and so null names) only from v12 on
            raise _Refused(E.INVALID_REQUEST, f"Metadata v{v} asks for topics by name only")
        if wanted is None or (v == 0 and not wanted):
            topics = [self._topic_metadata(t, E.NONE) for t in self.store.topics()]
        else:
            allow = self.config.auto_create_topics_enable and (v < 4 or req.allow_auto_topic_creation)
            topics = await self._lookup(wanted, allow)
        if v >= 8 and req.include_topic_authorized_operations:
            topics = [t.__class__(**{**_fields(t), "topic_authorized_operations": TOPIC_OPERATIONS})
                      for t in topics]
        # v8-10 may ask for the cluster's operations too (librdkafka's describe_cluster does)
        cluster = {"cluster_authorized_operations": CLUSTER_OPERATIONS} \
            if 8 <= v <= 10 and req.include_cluster_authorized_operations else {}
        brokers = tuple(Metadata.MetadataResponseBroker(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
                        for n in self.topology.live_nodes(ctx.listener))
        return Metadata(brokers=brokers, cluster_id=self.config.cluster_id,
                        controller_id=self.topology.controller(), topics=tuple(topics), **cluster)

    async def _lookup(self, wanted, allow_create: bool) -> list:
        T = Metadata.MetadataResponseTopic
        ids = list(dict.fromkeys(t.topic_id for t in wanted if t.topic_id != ZERO_UUID))
        if ids:
            found = {i: self.topic_name(i) for i in ids}
            unknown = [T(error_code=E.UNKNOWN_TOPIC_ID, name=None, topic_id=i) for i in ids if found[i] is None]
            names = [name for name in found.values() if name is not None]
        else:
            unknown, names = [], list(dict.fromkeys(t.name for t in wanted))
        existing, missing = [], []
        for name in names:
            try:
                existing.append(self._topic_metadata(self.store.topic(name), E.NONE))
            except UnknownTopicOrPartition:
                missing.append(name)
        invalid, creatable = [], []
        for name in missing:
            try:
                validate_topic_name(name)
                creatable.append(name)
            except InvalidTopic:
                invalid.append(T(error_code=E.INVALID_TOPIC_EXCEPTION, name=name, is_internal=_internal(name)))
        if allow_create:
            for name in creatable:
                await self._auto_create(name)
        # Kafka answers the request that triggered auto-creation (which its controller does
        # meanwhile) as it answers any unknown topic
        return [*unknown, *existing, *invalid, *(T(error_code=E.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                                   is_internal=_internal(name)) for name in creatable)]

    async def _auto_create(self, name: str) -> None:
        try:
            await trio.to_thread.run_sync(self.store.create_topic, name)
        except TopicsError as e:        # made meanwhile, an internal name, a colliding name...
            log.info("auto-creation of topic %r failed: %s", name, e)

    def _topic_metadata(self, topic, error):
        T = Metadata.MetadataResponseTopic
        parts = tuple(self._partition_metadata(topic.name, p) for p in range(len(topic.partitions)))
        return T(error_code=error, name=topic.name, topic_id=topic.topic_id, partitions=parts)

    def _partition_metadata(self, topic: str, p: int):
        """A partition's leader, epoch, replicas and in-sync replicas; a partition whose replicas
        are all stopped has no leader: LEADER_NOT_AVAILABLE, as Kafka answers."""
        lead = self.topology.of(topic, p)
        isr = self.topology.isr(lead)
        return Metadata.MetadataResponseTopic.MetadataResponsePartition(
            error_code=E.NONE if lead.leader != NO_LEADER else E.LEADER_NOT_AVAILABLE, partition_index=p,
            leader_id=lead.leader, leader_epoch=lead.epoch, replica_nodes=lead.replicas, isr_nodes=isr)

    # --- Produce -----------------------------------------------------------------------------
    async def produce(self, ctx, req):
        """Kafka's handleProduceRequest: from v13 topics are named by id, and every partition of
        an id this broker does not know is UNKNOWN_TOPIC_ID (checked before any other error)."""
        if self._transactional_without_id(req):
            raise _Refused(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        added = await self._add_to_transaction(ctx, req) if ctx.version >= TV2_PRODUCE else None
        now = _now_ms()
        topic_cls = Produce.TopicProduceResponse
        part_cls = topic_cls.PartitionProduceResponse
        responses = []
        endpoints: dict = {}
        for t in req.topic_data:
            name = self.topic_name(t.topic_id) if ctx.version >= 13 else t.name
            parts = []
            for p in t.partition_data:
                if name is None:
                    parts.append(part_cls(index=p.index, error_code=E.UNKNOWN_TOPIC_ID, base_offset=-1))
                    continue
                log_ = None
                try:
                    log_ = self.led(ctx, name, p.index)
                    records = bytes(p.records or b"")    # null records: an empty set
                    batches = _one_batch(records)
                    if batches[0].is_transactional:
                        if added is None:
                            self._verify(req.transactional_id, batches[0], name, p.index)
                        else:
                            _refuse_unverified(added.get((name, p.index), E.NONE), version_2=True)
                    if req.acks not in (-1, 0, 1):       # ReplicaManager.appendRecords, after verification
                        parts.append(part_cls(index=p.index, error_code=E.INVALID_REQUIRED_ACKS, base_offset=-1))
                        continue
                    info = log_.append(records, now, batches)
                    self.parked.appended(name, p.index)
                    parts.append(part_cls(index=p.index, error_code=E.NONE, base_offset=info.base_offset,
                                          log_append_time_ms=info.log_append_time,
                                          log_start_offset=log_.log_start_offset))
                except (TopicsError, _Refused) as e:
                    errors = tuple(part_cls.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                   for i, m in getattr(e, "record_errors", ()))
                    hint = {"current_leader": part_cls.LeaderIdAndEpoch(**self._leader_hint(
                        name, p.index, endpoints, ctx.listener))} if isinstance(e, NotLeader) and ctx.version >= 10 else {}
                    # ReplicaManager.appendToLocalLog: the log start offset but for the errors it
                    # expects (and those of the API's own checks); a message only for refused
                    # records and the translated verification errors
                    known = log_ is None or isinstance(e, _Refused | NotLeader | MessageTooLarge | CorruptRecords
                                                       | StorageError | UnknownTopicOrPartition)
                    told = errors or (isinstance(e, _Refused) and e.error_code in _VERIFICATION_MESSAGES)
                    parts.append(part_cls(index=p.index, error_code=e.error_code, base_offset=-1,
                                          log_start_offset=-1 if known else log_.log_start_offset,
                                          error_message=error_message(e) if told else None,
                                          record_errors=errors, **hint))
            responses.append(topic_cls(name=t.name, topic_id=t.topic_id, partition_responses=tuple(parts)))
        if req.acks == 0:
            return None
        return Produce(responses=tuple(responses), node_endpoints=tuple(
            Produce.NodeEndpoint(**fields) for fields in endpoints.values()))

    def _transactional_without_id(self, req) -> bool:
        """RequestUtils.hasTransactionalRecords without a transactional id: Kafka refuses the
        whole request, TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
        if req.transactional_id is not None:
            return False
        for t in req.topic_data:
            for p in t.partition_data:
                try:
                    if p.records and read_batches(bytes(p.records), verify_crc=False)[0].is_transactional:
                        return True
                except (DecodeError, IndexError):
                    continue
        return False

    def _verify(self, transactional_id: str | None, batch, topic: str, partition: int) -> None:
        """Kafka's produce-side transaction verification (transaction version 1): the partition
        must be in the producer's open transaction."""
        if transactional_id is None or self.verify_transaction is None:
            raise _Refused(E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                           "transactional records need the producer's transactional id")
        _refuse_unverified(self.verify_transaction(transactional_id, batch.producer_id, batch.producer_epoch,
                                                   topic, partition), version_2=False)

    async def _add_to_transaction(self, ctx, req) -> dict[tuple[str, int], ErrorCode]:
        """Transaction version 2 (Produce v12+): the leader adds the partitions of a transactional
        produce to the transaction itself, all in one call to the transaction coordinator, as
        Kafka's leader sends AddPartitionsToTxn v4+; a partition whose log holds the producer's
        transaction open at this epoch needs no add. The coordinator's answer, by partition."""
        if req.transactional_id is None or self.add_to_transaction is None:
            return {}
        wanted, producer = [], None
        for t in req.topic_data:
            name = self.topic_name(t.topic_id) if ctx.version >= 13 else t.name
            for p in t.partition_data if name is not None else ():
                try:
                    log_ = self.led(ctx, name, p.index)
                    batch = _one_batch(bytes(p.records or b""))[0]
                except (TopicsError, _Refused):
                    continue                 # answered in its turn
                if batch.is_transactional and not log_.in_transaction(batch.producer_id, batch.producer_epoch):
                    wanted.append((name, p.index))
                    producer = (batch.producer_id, batch.producer_epoch)
        if not wanted:
            return {}
        error = await self.add_to_transaction(req.transactional_id, *producer, wanted)
        return dict.fromkeys(wanted, error)

    # --- Fetch -------------------------------------------------------------------------------
    async def fetch(self, ctx, req):
        """Kafka's handleFetchRequest: at most min(max_bytes, fetch.max.bytes) in the answer (but
        always the first batch found: KIP-74), min_bytes no more than that, and an immediate
        answer when enough is there, a partition failed or there is nothing known to wait on.
        From v7 the partitions may come from an incremental fetch session (fetch_sessions.py),
        whose answer leaves out those with nothing new."""
        context = self.fetch_sessions.context(ctx.node_id, ctx.version, req, _now_ms())
        if context.kind == "error":
            return Fetch(error_code=context.error, session_id=0)
        max_bytes = min(req.max_bytes, self.config.fetch_max_bytes)
        min_bytes = min(req.min_bytes, max_bytes)
        read = self._read(ctx, req, context.partitions, max_bytes)
        wait_ms = self._wait_ms(req.max_wait_ms)
        if not (wait_ms <= 0 or read.size >= min_bytes or read.failed or not read.partitions):
            read = await self._wait_for_records(ctx, req, context.partitions, read, max_bytes, min_bytes, wait_ms)
        session_id, answered = self.fetch_sessions.respond(context, ctx.node_id, ctx.version, read.answered,
                                                           _now_ms())
        topics = []                   # FetchResponse.of: consecutive partitions of a topic together
        for _, label, topic_id, data in answered:
            if topics and (topics[-1].topic, topics[-1].topic_id) == (label, topic_id):
                topics[-1].partitions.append(data)
            else:
                topics.append(Fetch.FetchableTopicResponse(topic=label, topic_id=topic_id, partitions=[data]))
        return Fetch(error_code=E.NONE, session_id=session_id, responses=tuple(
            dataclasses.replace(t, partitions=tuple(t.partitions)) for t in topics), node_endpoints=tuple(
            Fetch.NodeEndpoint(**fields) for fields in read.endpoints.values()))

    async def _wait_for_records(self, ctx, req, wanted, read, max_bytes: int, min_bytes: int, wait_ms: int):
        """Park until min_bytes are there, a partition fails, max_wait_ms passes or the client
        hangs up; the last read."""
        deadline = trio.current_time() + wait_ms / 1000
        with self.parked.park(read.partitions) as waiter:
            with trio.move_on_at(deadline):
                async with trio.open_nursery() as watching:
                    if ctx.until_closed is not None:     # an abandoned fetch ends with its connection
                        watching.start_soon(_cancel_when_done, ctx.until_closed, watching.cancel_scope)
                    while True:
                        await waiter.wait()
                        read = self._read(ctx, req, wanted, max_bytes)
                        if read.size >= min_bytes or read.failed:
                            break
                    watching.cancel_scope.cancel()
            if waiter.woken:                    # records arrived as the wait ran out
                read = self._read(ctx, req, wanted, max_bytes)
        return read

    def _wait_ms(self, asked_ms: int) -> int:
        """How long a fetch may park. Kafka takes a consumer's max_wait_ms as it comes; we bound
        it by connections.max.idle.ms, past which Kafka would have closed the silent connection
        anyway, so a fetch cannot park for the 24 days an INT32 allows."""
        idle_ms = self.config.connections_max_idle_ms
        return min(asked_ms, idle_ms) if idle_ms >= 0 else asked_ms

    def _read(self, ctx, req, wanted: list, max_bytes: int) -> _Read:
        """One pass over the partitions (ReplicaManager.readFromLog): each gets what is left of
        ``max_bytes`` up to its own partition_max_bytes; the first non-empty one may exceed both.
        A partition another node leads answers NOT_LEADER_OR_FOLLOWER (and, v16+, its leader)
        at once, as Kafka answers any partition error. ``wanted``: (key, fetch_sessions.Cached)
        of each partition. Kafka's API layer answers unknown topic ids, then the topics the client
        may not READ and the unknown partitions itself, after the partitions read (with an empty
        list of aborted transactions where a read's error has none)."""
        v = ctx.version
        endpoints: dict = {}
        part_cls = Fetch.FetchableTopicResponse.PartitionData
        budget = max_bytes
        committed = v >= 4 and req.isolation_level == READ_COMMITTED
        total = 0
        first = True
        failed = False
        known, answered, unknown_ids, refused = [], [], [], []

        def refuse(to, entry, error):
            to.append((*entry, part_cls(partition_index=entry[0][1], error_code=error, high_watermark=-1,
                                        log_start_offset=-1, records=b"")))
        named = []
        for key, cached in wanted:
            name = self.topic_name(cached.topic_id) if v >= 13 else cached.topic
            if name is None:
                refuse(unknown_ids, (key, cached.topic, cached.topic_id), E.UNKNOWN_TOPIC_ID)
            else:
                named.append((key, cached, name))
        readable = {}                         # topic -> READ allowed (Kafka asks once per topic)
        for key, cached, name in named:
            p, entry = cached.request, (key, cached.topic, cached.topic_id)
            if name not in readable:
                readable[name] = self.may_read is None or self.may_read(ctx, name)
            if not readable[name]:
                refuse(refused, entry, E.TOPIC_AUTHORIZATION_FAILED)
                continue
            if not self.has_partition(name, p.partition):
                refuse(refused, entry, E.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            log_ = None
            try:
                log_ = self.led(ctx, name, p.partition, p.current_leader_epoch)
                known.append((name, p.partition))
                stable = log_.last_stable_offset
                records = log_.read(p.fetch_offset, max(0, min(p.partition_max_bytes, budget)),
                                    min_one=first, upto=stable if committed else None, one_segment=True)
                if records:
                    first = False
                budget -= len(records)
                total += len(records)
                answered.append((*entry, part_cls(
                    partition_index=p.partition, error_code=E.NONE, high_watermark=log_.high_watermark,
                    last_stable_offset=stable, log_start_offset=log_.log_start_offset, records=records,
                    aborted_transactions=_aborted(log_, p.fetch_offset, records) if committed else None)))
            except TopicsError as e:          # ReplicaManager.createLogReadResult: no offsets
                not_leader = isinstance(e, (NotLeader, FencedLeaderEpoch))
                # a partition deleted meanwhile is no read failure; a leadership error answers at once
                failed = failed or log_ is not None or not isinstance(e, UnknownTopicOrPartition)
                hint = {"current_leader": part_cls.LeaderIdAndEpoch(**self._leader_hint(
                    name, p.partition, endpoints, ctx.listener))} if not_leader and v >= 16 else {}
                answered.append((*entry, part_cls(partition_index=p.partition, error_code=e.error_code,
                                                  high_watermark=-1, log_start_offset=-1,
                                                  aborted_transactions=None, records=b"", **hint)))
        return _Read(answered + unknown_ids + refused, total, known, failed, endpoints)

    # --- ListOffsets -------------------------------------------------------------------------
    async def list_offsets(self, ctx, req):
        """Kafka's ReplicaManager.fetchOffset: a special timestamp the version does not know is
        UNSUPPORTED_VERSION (before any check of the partition); without tiered storage the
        latest tiered offset (-5) and the earliest pending upload (-6) are -1, at epoch -1."""
        topic_cls = ListOffsets.ListOffsetsTopicResponse
        part_cls = topic_cls.ListOffsetsPartitionResponse

        def answer(t, p):
            if p.timestamp < 0 and SPECIAL_TIMESTAMPS.get(p.timestamp, 0x7FFF) > ctx.version:
                return part_cls(partition_index=p.partition_index, error_code=E.UNSUPPORTED_VERSION)
            log_ = self.led(ctx, t.name, p.partition_index, p.current_leader_epoch)
            epoch = self.topology.of(t.name, p.partition_index).epoch
            if p.timestamp == LATEST:
                offset = log_.last_stable_offset if req.isolation_level == READ_COMMITTED else log_.high_watermark
                ts = -1
            elif p.timestamp == MAX_TIMESTAMP:
                offset, ts = log_.max_timestamp_offset()
            elif p.timestamp in _NOTHING_TIERED:
                offset, ts, epoch = -1, -1, -1
            elif p.timestamp < 0:                    # earliest, earliest local
                offset, ts = log_.log_start_offset, -1
            else:
                offset, ts = log_.offset_for_timestamp(p.timestamp)
            if offset == -1:                         # none found: no epoch either
                epoch = -1
            # LeaderEpoch exists from v4 on; v1-3 (kafka-python 2.0.2) keep the default.
            return part_cls(partition_index=p.partition_index, error_code=E.NONE, timestamp=ts, offset=offset,
                            leader_epoch=epoch if ctx.version >= 4 else -1)

        answered = each_partition(req.topics, lambda t: t.partitions, answer,
                                  lambda t, p, e: part_cls(partition_index=p.partition_index, error_code=e.error_code))
        return ListOffsets(topics=tuple(topic_cls(name=t.name, partitions=parts) for t, parts in answered))

    # --- CreateTopics / DeleteTopics ----------------------------------------------------------
    async def create_topics(self, ctx, req):
        """Kafka's ControllerApis.createTopics and ReplicationControlManager.createTopics: a name
        given twice is answered INVALID_REQUEST after the others; the rest are checked in
        Kafka's order (name, existence, configs, assignment, replication factor, partitions).
        The controller bounds one request to MAX_PARTITIONS_PER_BATCH partitions and
        MAX_RECORDS_PER_USER_OP metadata records (a topic record, its config records, one per
        partition) and fails all of it beyond; the files are made in a worker thread, so large
        topics never stall the event loop."""
        result_cls = CreateTopics.CreatableTopicResult
        named = Counter(t.name for t in req.topics)
        wanted = [t for t in req.topics if named[t.name] == 1]
        if sum(self._partitions_asked(t) for t in wanted) > MAX_PARTITIONS_PER_BATCH:
            raise _Refused(E.POLICY_VIOLATION, "Excessively large number of partitions per request.")
        checked = []                 # (topic, (its partition count, its configs) or its refusal)
        for t in wanted:
            try:
                checked.append((t, self._check_new_topic(t)))
            except (TopicsError, _Refused) as e:
                checked.append((t, e))
        records = sum(1 + len(t.configs) + outcome[0]
                      for t, outcome in checked if not isinstance(outcome, Exception))
        if records > MAX_RECORDS_PER_USER_OP:
            log.info("CreateTopics refused: %d metadata records exceed %d", records, MAX_RECORDS_PER_USER_OP)
            raise _Refused(E.POLICY_VIOLATION, EXCESSIVE_BATCH)
        results = []
        for t, outcome in checked:
            if isinstance(outcome, Exception):
                results.append(result_cls(name=t.name, error_code=outcome.error_code,
                                          error_message=error_message(outcome)))
                continue
            partitions, configs = outcome
            replicas = len(t.assignments[0].broker_ids) if t.assignments else t.replication_factor
            try:
                if req.validate_only:       # Kafka's controller names the topic it would make
                    topic = dataclasses.replace(self.store.create_topic(
                        t.name, partitions, validate_only=True, configs=configs, replication_factor=replicas),
                        topic_id=uuid.uuid4())
                else:
                    topic = await trio.to_thread.run_sync(partial(
                        self.store.create_topic, t.name, partitions, configs=configs, replication_factor=replicas))
                shown = result_cls.CreatableTopicConfigs
                results.append(result_cls(
                    name=t.name, topic_id=topic.topic_id, error_code=E.NONE, error_message=None,
                    num_partitions=len(topic.partitions) or partitions,
                    replication_factor=topic.replication_factor, configs=tuple(
                        shown(name=e.name, value=e.value, read_only=False, config_source=e.source,
                              is_sensitive=False)
                        for e in sorted(topic_configs.describe(configs, self.config_apis.layers()),
                                        key=lambda e: e.name))))         # Kafka lists them by name
            except TopicsError as e:
                results.append(result_cls(name=t.name, error_code=e.error_code, error_message=error_message(e)))
        results += [result_cls(name=name, error_code=E.INVALID_REQUEST, error_message="Duplicate topic name.")
                    for name in hash_map_order([n for n, times in named.items() if times > 1])]
        return CreateTopics(topics=tuple(results))

    def _partitions_asked(self, t) -> int:
        """ReplicationControlManager.validateTotalNumberOfPartitions: what one entry counts."""
        if t.assignments:
            return len(t.assignments)
        return self.store.partition_count(t.num_partitions) if t.num_partitions == -1 or t.num_partitions > 0 else 0

    def _check_new_topic(self, t) -> tuple[int, dict[str, str]]:
        """A CreateTopics entry's partition count and configs, or what Kafka answers: the name
        (invalid, existing, colliding), its configs, then its partitions and replicas."""
        self.store.create_topic(t.name, 1, validate_only=True)
        configs = _topic_configs(t)
        return self._partitions_to_create(t), configs

    def _partitions_to_create(self, t) -> int:
        """The partition count a CreateTopics entry asks for, checked as Kafka's controller
        checks it (ReplicationControlManager.createTopic); _Refused otherwise. Partitions are
        placed our way whatever a manual assignment names; its size is the replication factor."""
        if t.assignments:
            if t.replication_factor != -1:
                raise _Refused(E.INVALID_REQUEST, "A manual partition assignment was specified, but "
                               "replication factor was not set to -1.")
            if t.num_partitions != -1:
                raise _Refused(E.INVALID_REQUEST, "A manual partition assignment was specified, but "
                               "numPartitions was not set to -1.")
            seen, replicas = set(), None
            for a in t.assignments:
                if a.partition_index in seen:
                    raise _Refused(E.INVALID_REPLICA_ASSIGNMENT, "Found multiple manual partition "
                                   f"assignments for partition {a.partition_index}")
                seen.add(a.partition_index)
                self.topic_admin.check_assignment(list(a.broker_ids), replicas)
                replicas = len(a.broker_ids)
            if seen != set(range(len(seen))):
                raise _Refused(E.INVALID_REPLICA_ASSIGNMENT,
                               "partitions should be a consecutive 0-based integer sequence")
            return len(t.assignments)
        if t.replication_factor < -1 or t.replication_factor == 0:
            raise _Refused(E.INVALID_REPLICATION_FACTOR,
                           "Replication factor must be larger than 0, or -1 to use the default value.")
        if t.num_partitions < -1 or t.num_partitions == 0:
            raise _Refused(E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
        replicas = self.config.default_replication_factor if t.replication_factor == -1 else t.replication_factor
        brokers = len(self.topology.live)
        if replicas > brokers:
            raise _Refused(E.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {replicas} "
                           f"time(s): The target replication factor of {replicas} cannot be reached because "
                           f"only {brokers} broker(s) are registered or some brokers have all their log "
                           "directories cordoned.")
        return self.store.partition_count(t.num_partitions)

    async def delete_topics(self, ctx, req):
        """Kafka's ControllerApis.deleteTopics: names and ids given twice, entries naming both or
        neither are INVALID_REQUEST; unknown names UNKNOWN_TOPIC_OR_PARTITION and unknown ids
        UNKNOWN_TOPIC_ID, with Kafka's default messages. (Kafka shuffles its answer's entries;
        ours come in the request's order.)"""
        result_cls = DeleteTopics.DeletableTopicResult
        refused = []

        def refuse(name, topic_id, error, message=None):
            refused.append(result_cls(name=name, topic_id=topic_id, error_code=error,
                                      error_message=message or default_message(error)))
        given = [(t.name, t.topic_id) for t in req.topics] if ctx.version >= 6 else \
            [(name, ZERO_UUID) for name in req.topic_names]
        names = Counter(name for name, topic_id in given if name is not None and topic_id == ZERO_UUID)
        ids = Counter(topic_id for name, topic_id in given if name is None and topic_id != ZERO_UUID)
        for name, topic_id in given:
            if name is None and topic_id == ZERO_UUID:
                refuse(None, ZERO_UUID, E.INVALID_REQUEST, "Neither topic name nor id were specified.")
            elif name is not None and topic_id != ZERO_UUID:
                refuse(name, topic_id, E.INVALID_REQUEST, "You may not specify both topic name and topic id.")
        for name in (n for n, times in names.items() if times > 1):
            refuse(name, ZERO_UUID, E.INVALID_REQUEST, "Duplicate topic name.")
        for topic_id in (i for i, times in ids.items() if times > 1):
            refuse(None, topic_id, E.INVALID_REQUEST, "Duplicate topic id.")
        doomed: dict[uuid.UUID, str] = {}
        for topic_id in (i for i, times in ids.items() if times == 1):
            name = self.topic_name(topic_id)
            if name is None:
                refuse(None, topic_id, E.UNKNOWN_TOPIC_ID)
            else:
                doomed[topic_id] = name
        for name in (n for n, times in names.items() if times == 1):
            try:
                topic_id = self.store.topic(name).topic_id
            except UnknownTopicOrPartition:
                refuse(name, ZERO_UUID, E.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            if topic_id in doomed or ids[topic_id] > 1:
                doomed.pop(topic_id, None)
                refuse(name, topic_id, E.INVALID_REQUEST,
                       "The provided topic name maps to an ID that was already supplied.")
            else:
                doomed[topic_id] = name
        results = []
        for topic_id, name in doomed.items():
            try:
                await trio.to_thread.run_sync(self.store.delete_topic, name)
                results.append(result_cls(name=name, topic_id=topic_id, error_code=E.NONE))
            except TopicsError as e:                # deleted meanwhile, a storage failure
                results.append(result_cls(name=name, topic_id=topic_id, error_code=e.error_code,
                                          error_message=error_message(e)))
        deleted = {r.name for r in results if r.error_code == E.NONE}
        if deleted:
            self.on_topics_deleted(deleted)
        return DeleteTopics(responses=(*refused, *results))

    # --- DescribeProducers ----------------------------------------------------------------------
    async def describe_producers(self, ctx, req):
        """Kafka's handleDescribeProducersRequest: each partition's active producers, their
        last sequence and timestamp, and where their open transaction began."""
        topic_cls = DescribeProducers.TopicResponse
        part_cls = topic_cls.PartitionResponse
        state_cls = part_cls.ProducerState
        topics = []
        for t in req.topics:
            parts = []
            try:                        # KafkaApis: the topic's name, then its existence
                validate_topic_name(t.name)
                self.store.topic(t.name)
                refused = None
            except InvalidTopic as e:
                refused = (e.error_code, str(e))
            except UnknownTopicOrPartition:
                refused = (E.UNKNOWN_TOPIC_OR_PARTITION, default_message(E.UNKNOWN_TOPIC_OR_PARTITION))
            for p in t.partition_indexes:
                if refused is not None:
                    parts.append(part_cls(partition_index=p, error_code=refused[0], error_message=refused[1]))
                    continue
                try:
                    log_ = self.led(ctx, t.name, p)
                except TopicsError as e:        # ReplicaManager.activeProducerState: no message
                    parts.append(part_cls(partition_index=p, error_code=e.error_code))
                    continue
                ongoing = log_.transactions.ongoing
                # in the order of Kafka's HashMap<Long, ProducerStateEntry> of the partition
                entries = dict(log_.producers.entries())
                parts.append(part_cls(partition_index=p, error_code=E.NONE, active_producers=tuple(
                    state_cls(producer_id=pid, producer_epoch=entries[pid].epoch,
                              last_sequence=entries[pid].last_seq, last_timestamp=entries[pid].last_timestamp,
                              coordinator_epoch=entries[pid].coordinator_epoch,
                              current_txn_start_offset=ongoing.get(pid, -1))
                    for pid in long_map_order(list(entries)))))
            topics.append(topic_cls(name=t.name, partitions=tuple(parts)))
        return DescribeProducers(topics=tuple(topics))

    def write_marker(self, topic: str, partition: int, producer_id: int, epoch: int, commit: bool,
                     coordinator_epoch: int = 0, transaction_version: int = 0) -> ErrorCode:
        """Write a transaction marker into a partition and wake its parked fetches."""
        try:
            self.store.partition(topic, partition).write_marker(
                producer_id, epoch, commit, coordinator_epoch, _now_ms(), transaction_version)
        except TopicsError as e:
            return e.error_code
        self.parked.appended(topic, partition)
        return E.NONE

    # --- leader changes (in a cluster) ---------------------------------------------------------
    def leader_changed(self, topic: str, partition: int) -> None:
        """A new leader epoch starts at the partition's log end; its share-partitions start
        again from their share state; fetches parked on it wake (and are answered as ``led``
        orders it: FENCED_LEADER_EPOCH for the old epoch)."""
        try:
            log_ = self.store.partition(topic, partition)
        except TopicsError:
            return
        log_.leader_epoch = epoch = self.topology.of(topic, partition).epoch
        self.epoch_starts.setdefault((topic, partition), []).append((epoch, log_.high_watermark))
        self.share.leader_changed(topic, partition)
        self.parked.appended(topic, partition)

    async def offset_for_leader_epoch(self, ctx, req):
        """Kafka's Partition.lastOffsetForLeaderEpoch for a consumer (the leader alone answers,
        see :meth:`led`), then LeaderEpochFileCache.endOffsetFor: the asked epoch's end (the
        start of the next one), the log end for the current epoch, undefined past it."""
        topic_cls = OffsetForLeaderEpoch.OffsetForLeaderTopicResult
        part_cls = topic_cls.EpochEndOffset

        def answer(t, p):
            log_ = self.led(ctx, t.topic, p.partition, p.current_leader_epoch)
            current = self.topology.of(t.topic, p.partition).epoch
            epoch, end = self._epoch_end(t.topic, p.partition, p.leader_epoch, current, log_.high_watermark)
            return part_cls(error_code=E.NONE, partition=p.partition, leader_epoch=epoch, end_offset=end)

        answered = each_partition(req.topics, lambda t: t.partitions, answer,
                                  lambda t, p, e: part_cls(error_code=e.error_code, partition=p.partition))
        return OffsetForLeaderEpoch(topics=tuple(topic_cls(topic=t.topic, partitions=parts) for t, parts in answered))

    def _epoch_end(self, topic: str, partition: int, asked: int, current: int, log_end: int) -> tuple[int, int]:
        if asked == UNDEFINED_EPOCH or asked > current:
            return UNDEFINED_EPOCH, -1
        if asked == current:
            return current, log_end
        epochs = [(0, 0), *self.epoch_starts.get((topic, partition), ())]
        floor = max((e for e, _ in epochs if e <= asked), default=asked)
        return floor, min(start for e, start in epochs if e > asked)

    # --- housekeeping ------------------------------------------------------------------------
    async def retention_loop(self) -> None:
        """Kafka's retention task: first ``log.initial.task.delay.ms`` after the start, then
        every ``log.retention.check.interval.ms``."""
        await trio.sleep(self.config.log_initial_task_delay_ms / 1000)
        while True:
            deleted = self.store.apply_retention(_now_ms())
            if deleted:
                log.info("retention deleted %d segment(s)", deleted)
            await trio.sleep(self.config.log_retention_check_interval_ms / 1000)

    async def cleaner_loop(self) -> None:
        """Kafka's log cleaner thread: clean the filthiest compacted partition, then the next;
        wait log.cleaner.backoff.ms when none is cleanable (or a cleaning was abandoned). The
        work runs in a worker thread; only each group's swap runs here, between requests."""
        while True:
            job = self.cleaner.grab_filthiest(self.store, _now_ms())
            cleaned = None if job is None else await trio.to_thread.run_sync(self.cleaner.clean, job)
            complete = cleaned is not None
            for group in cleaned.groups if cleaned is not None else ():
                await trio.lowlevel.checkpoint()    # requests go on between groups; when closing,
                complete = self.cleaner.swap_group(job, group, abandon=not complete) and complete
            if cleaned is not None:                 # the cancellation stops before the next swap
                self.cleaner.finish(job, cleaned, complete)
            if not complete:
                await trio.sleep(self.config.log_cleaner_backoff_ms / 1000)


class _Read(NamedTuple):
    """One read pass of a Fetch: each partition's (session key, topic, topic id, answer), its
    record bytes, the partitions it could wait on, whether reading one of them failed (which
    answers at once, as in Kafka), and the leaders' endpoints named (v16+)."""
    answered: list
    size: int
    partitions: list
    failed: bool
    endpoints: dict


async def _cancel_when_done(event, scope: trio.CancelScope) -> None:
    await event()
    scope.cancel()


def _aborted(log_, fetch_offset: int, records: bytes) -> tuple:
    """The aborted transactions a read_committed reader of ``records`` must skip."""
    if not records or not log_.transactions.aborted:
        return ()
    last = read_batches(records, verify_crc=False)[-1]
    end = last.base_offset + last.last_offset_delta + 1
    entry = Fetch.FetchableTopicResponse.PartitionData.AbortedTransaction
    return tuple(entry(producer_id=a.producer_id, first_offset=a.first_offset)
                 for a in log_.transactions.aborted_between(fetch_offset, end))


def _refuse_unverified(error: ErrorCode, *, version_2: bool) -> None:
    """The coordinator's verdict on a transactional produce as Kafka's leader answers it: a fenced
    producer is INVALID_PRODUCER_EPOCH, a partition not in the transaction INVALID_TXN_STATE, a
    coordinator out of reach NOT_ENOUGH_REPLICAS, and so is CONCURRENT_TRANSACTIONS before
    transaction version 2 (whose producers retry it: the previous transaction is ending)."""
    if error == E.NONE:
        return
    if error in (E.TRANSACTION_ABORTABLE, E.INVALID_TXN_STATE):
        raise _Refused(E.INVALID_TXN_STATE, "Partition was not added to the transaction")
    if error == E.PRODUCER_FENCED:
        raise _Refused(E.INVALID_PRODUCER_EPOCH)
    if error in _UNREACHABLE or (error == E.CONCURRENT_TRANSACTIONS and not version_2):
        raise _Refused(E.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to "
                       f"the transaction. Underlying error: {error.name}")
    raise _Refused(error)


def _one_batch(records: bytes) -> list[BatchHeader]:
    """Produce v3+ carries exactly one record batch per partition (Kafka: INVALID_RECORD
    otherwise); the batch as parsed, for the log to use without parsing it again."""
    if not records:
        raise _Refused(E.INVALID_RECORD, "no records")
    try:
        headers = read_batches(records, verify_crc=False)
    except DecodeError as e:
        raise _Refused(E.CORRUPT_MESSAGE, str(e)) from None
    if len(headers) != 1:
        raise _Refused(E.INVALID_RECORD, "produce requests carry one batch per partition")
    return headers


def _internal(name: str) -> bool:
    """Kafka's Topic.isInternal."""
    return name in INTERNAL_TOPIC_NAMES


def _fields(obj) -> dict:
    return {f: getattr(obj, f) for f in obj.__dataclass_fields__}


def _topic_configs(t) -> dict[str, str]:
    """A CreateTopics entry's configs, validated as Kafka's controller does (a repeated name:
    the last one wins); _Refused with INVALID_CONFIG and Kafka's message otherwise."""
    try:
        return topic_configs.validate({c.name: c.value for c in t.configs})
    except InvalidConfig as e:
        raise _Refused(E.INVALID_CONFIG, str(e)) from None
