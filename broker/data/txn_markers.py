"""WriteTxnMarkers (a transaction coordinator's, or ``kafka-transactions abort``'s): a marker for
a ``__consumer_offsets`` partition goes to its group shard (``group_marker(partition, producer_id,
epoch, commit, coordinator_epoch)``), any other to the partition's log, which checks the epochs."""

from __future__ import annotations

from coordinator.transactions.marker_answers import Results, answer
from protocol.errors import ErrorCode as E

from topic_log import TopicsError

from broker.cluster.topology import GROUP_TOPIC
from broker.data.errors import Refused

#: a group shard not (yet) serving: told as NOT_LEADER_OR_FOLLOWER, which coordinators retry on
_SHARD_NOT_READY = frozenset({E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR})


async def write_txn_markers(plane, group_marker, ctx, req):
    """Kafka's handleWriteTxnMarkersRequest: per marker, a partition this node holds no replica of
    is UNKNOWN_TOPIC_OR_PARTITION, the others are written; a marker naming none is left out."""
    results: Results = {}
    for m in req.markers:
        wanted = list(dict.fromkeys((t.name, p) for t in m.topics for p in t.partition_indexes))
        if not wanted:
            continue
        errors = results.setdefault(m.producer_id, {})
        hosted = [tp for tp in wanted if _hosted(plane, ctx, *tp)]
        errors.update((tp, E.UNKNOWN_TOPIC_OR_PARTITION) for tp in wanted if tp not in hosted)
        for topic, p in hosted:
            errors[topic, p] = await (_to_shard(plane, group_marker, ctx, p, m) if topic == GROUP_TOPIC
                                      else _to_log(plane, ctx, topic, p, m))
    return answer(results, concurrent=True)


def _hosted(plane, ctx, topic: str, partition: int) -> bool:       # Kafka's onlinePartition
    exists = 0 <= partition < plane.config.coordinator.offsets_topic_num_partitions if topic == GROUP_TOPIC \
        else plane.has_partition(topic, partition)
    return exists and (plane.topology.single or ctx.node_id in plane.topology.of(topic, partition).replicas)


async def _to_shard(plane, group_marker, ctx, partition: int, m) -> E:
    if not plane.topology.single and plane.topology.of(GROUP_TOPIC, partition).leader != ctx.node_id:
        return E.NOT_LEADER_OR_FOLLOWER
    error = await group_marker(partition, m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch)
    return E.NOT_LEADER_OR_FOLLOWER if error in _SHARD_NOT_READY else error


async def _to_log(plane, ctx, topic: str, partition: int, m) -> E:
    try:
        plane.led(ctx, topic, partition)
    except TopicsError as e:
        return e.error_code
    if -1 in (m.producer_id, m.producer_epoch):       # Kafka cannot build it: the whole request fails
        raise Refused(E.UNKNOWN_SERVER_ERROR, "no producer id or epoch")
    return plane.write_marker(topic, partition, m.producer_id, m.producer_epoch, m.transaction_result,
                              m.coordinator_epoch, m.transaction_version)
