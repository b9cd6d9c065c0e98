"""CreatePartitions and DeleteRecords, answered as a single-node Kafka 4 answers them.

CreatePartitions follows Kafka's controller (ControllerApis.createPartitions and
ReplicationControlManager.createPartitions): duplicate names, then per topic its existence,
the new count, the manual assignments; the new partitions are made in a worker thread.
DeleteRecords follows ReplicaManager.deleteRecords and Partition.deleteRecordsOnLeader: the
new log start offset is made durable (in a worker thread) before it is shown or answered.
Both are serialized, as Kafka's controller and partition locks serialize them.
"""

from __future__ import annotations

import logging
from collections import Counter

import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from topic_log import StorageError, TopicsError, TopicStore, UnknownTopicOrPartition

from broker.config import BrokerConfig
from broker.data.errors import EXCESSIVE_BATCH, MAX_RECORDS_PER_USER_OP, Refused, error_message

log = logging.getLogger("groupbroker.data")
E = ErrorCode
CreatePartitions = RESPONSES[ApiKey.CREATE_PARTITIONS].cls
DeleteRecords = RESPONSES[ApiKey.DELETE_RECORDS].cls
#: DeleteRecordsRequest.HIGH_WATERMARK: delete everything before the high watermark
HIGH_WATERMARK = -1
OFFSETS_TOPIC = "__consumer_offsets"


class TopicAdmin:
    def __init__(self, store: TopicStore, config: BrokerConfig, node_ids: list[int], led):
        """``led(ctx, topic, partition)``: the partition's log if the node asked leads it."""
        self.store, self.config, self.node_ids, self.led = store, config, node_ids, led
        self._growing = trio.Lock()
        self._deleting = trio.Lock()

    # --- CreatePartitions ---------------------------------------------------------------------
    async def create_partitions(self, ctx, req):
        """Each topic is checked, then grown, in turn; what they add together is bounded by
        MAX_RECORDS_PER_USER_OP (one metadata record per new partition in Kafka's controller)."""
        result = CreatePartitions.CreatePartitionsTopicResult
        named = Counter(t.name for t in req.topics)
        duplicates = [name for name, times in named.items() if times > 1]
        unique = [t for t in req.topics if t.name not in duplicates]
        if len(unique) > MAX_RECORDS_PER_USER_OP:       # the controller's result list overflows
            raise Refused(E.POLICY_VIOLATION, EXCESSIVE_BATCH)
        results = [result(name=n, error_code=E.INVALID_REQUEST, error_message="Duplicate topic name.")
                   for n in duplicates]
        async with self._growing:
            budget = MAX_RECORDS_PER_USER_OP
            for t in unique:
                try:
                    added = self._partitions_to_add(t)
                    if added > budget:
                        # Kafka's bounded record list overflows inside this topic: it (and every
                        # later one) fails with UNKNOWN_SERVER_ERROR (Kafka keeps the records that
                        # fit; we add none of this topic's)
                        budget = 0
                        log.warning("CreatePartitions of %s refused: the request adds more than %d "
                                    "partitions", t.name, MAX_RECORDS_PER_USER_OP)
                        raise Refused(E.UNKNOWN_SERVER_ERROR)
                    budget -= added
                    if not req.validate_only:
                        await trio.to_thread.run_sync(self.store.add_partitions, t.name, t.count)
                    results.append(result(name=t.name, error_code=E.NONE, error_message=None))
                except UnknownTopicOrPartition:
                    results.append(result(name=t.name, error_code=E.UNKNOWN_TOPIC_OR_PARTITION,
                                          error_message=None))
                except (TopicsError, Refused) as e:
                    results.append(result(name=t.name, error_code=e.error_code, error_message=error_message(e)))
        return CreatePartitions(results=tuple(results))

    def _partitions_to_add(self, t) -> int:
        """How many partitions entry ``t`` adds; raises what Kafka's controller answers."""
        current = len(self.store.add_partitions(t.name, t.count, validate_only=True).partitions)
        added = t.count - current
        if t.assignments is not None:
            if len(t.assignments) != added:
                raise Refused(E.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {added} additional "
                              f"partition(s), but only {len(t.assignments)} assignment(s) were specified.")
            for a in t.assignments:
                self.check_assignment(list(a.broker_ids))
        return added

    def check_assignment(self, brokers: list[int], replicas: int | None = None) -> None:
        """ReplicationControlManager.validateManualPartitionAssignment: ``replicas`` is the
        replica count the other partitions have, if known (placement stays ours: partitions are
        striped over the nodes whatever the assignment names)."""
        if not brokers:
            raise Refused(E.INVALID_REPLICA_ASSIGNMENT,
                          "The manual partition assignment includes an empty replica list.")
        previous = None
        for broker in sorted(brokers):
            if broker not in self.node_ids:
                raise Refused(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                              f"broker {broker}, but no such broker is registered.")
            if broker == previous:
                raise Refused(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                              f"the broker {broker} more than once.")
            previous = broker
        if replicas is not None and len(brokers) != replicas:
            raise Refused(E.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes a "
                          f"partition with {len(brokers)} replica(s), but this is not consistent with "
                          f"previous partitions, which have {replicas} replica(s).")

    # --- DeleteRecords ------------------------------------------------------------------------
    async def delete_records(self, ctx, req):
        """One answer per partition named (the last offset wins for a partition named twice);
        an error answers low watermark -1."""
        wanted: dict[str, dict[int, int]] = {}
        for t in req.topics:
            for p in t.partitions:
                wanted.setdefault(t.name, {})[p.partition_index] = p.offset
        topic_cls = DeleteRecords.DeleteRecordsTopicResult
        part_cls = topic_cls.DeleteRecordsPartitionResult
        topics = []
        async with self._deleting:
            for name, offsets in wanted.items():
                parts = []
                for partition, offset in offsets.items():
                    try:
                        low = await self._delete_before(ctx, name, partition, offset)
                        parts.append(part_cls(partition_index=partition, low_watermark=low, error_code=E.NONE))
                    except (TopicsError, Refused) as e:
                        log.debug("DeleteRecords on %s-%d: %s", name, partition, e)
                        parts.append(part_cls(partition_index=partition, low_watermark=-1,
                                              error_code=e.error_code))
                topics.append(topic_cls(name=name, partitions=tuple(parts)))
        return DeleteRecords(topics=tuple(topics))

    async def _delete_before(self, ctx, name: str, partition: int, offset: int) -> int:
        """Partition.deleteRecordsOnLeader: -1 means the high watermark; the answer is the new
        low watermark (the log start offset)."""
        if name == OFFSETS_TOPIC and 0 <= partition < self.config.coordinator.offsets_topic_num_partitions:
            raise Refused(E.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {name}")
        plog = self.led(ctx, name, partition)
        target = plog.high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0:
            raise Refused(E.OFFSET_OUT_OF_RANGE, f"The offset {target} for partition {name}-{partition} "
                          "is not valid")
        if target > plog.high_watermark:
            return plog.advance_log_start(target)        # raises Kafka's OFFSET_OUT_OF_RANGE
        if target > plog.log_start_offset:
            try:
                await trio.to_thread.run_sync(plog.checkpoint_log_start, target)
            except StorageError:
                if self.store.partition(name, partition) is not plog:     # deleted meanwhile
                    raise UnknownTopicOrPartition(f"topic {name!r} was deleted") from None
                raise
        return plog.advance_log_start(target)
