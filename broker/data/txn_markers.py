"""WriteTxnMarkers: the commit or abort markers a transaction coordinator, or
Admin.abortTransaction (``kafka-transactions abort``), asks this partition leader to write. A
``__consumer_offsets`` partition's marker goes to its group coordinator shard
(``group_marker(partition, producer_id, epoch, commit, coordinator_epoch)``), any other to the
partition's log, which checks the producer and coordinator epochs."""

from __future__ import annotations

from coordinator.transactions.marker_answers import Results, answer
from protocol.errors import ErrorCode as E

from topic_log import TopicsError

from broker.cluster.topology import GROUP_TOPIC
from broker.data.errors import Refused

#: a group coordinator not (yet) serving the partition: what a transaction coordinator expects
#: to retry on is NOT_LEADER_OR_FOLLOWER
_SHARD_NOT_READY = frozenset({E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR})


async def write_txn_markers(plane, group_marker, ctx, req):
    """Kafka's handleWriteTxnMarkersRequest: per marker, the partitions this node holds no
    replica of are UNKNOWN_TOPIC_OR_PARTITION, the others are written. A marker naming no
    partition is left out of the answer."""
    results: Results = {}
    topology = plane.topology
    for m in req.markers:
        wanted = list(dict.fromkeys((t.name, p) for t in m.topics for p in t.partition_indexes))
        if not wanted:
            continue
        errors = results.setdefault(m.producer_id, {})
        hosted = [(topic, p) for topic, p in wanted if (
            0 <= p < plane.config.coordinator.offsets_topic_num_partitions if topic == GROUP_TOPIC else plane.has_partition(topic, p))
            and (topology.single or ctx.node_id in topology.of(topic, p).replicas)]
        errors.update((tp, E.UNKNOWN_TOPIC_OR_PARTITION) for tp in wanted if tp not in hosted)
        for topic, p in hosted:
            if topic == GROUP_TOPIC:
                error = E.NOT_LEADER_OR_FOLLOWER if not topology.single and topology.of(topic, p).leader != ctx.node_id \
                    else await group_marker(p, m.producer_id, m.producer_epoch, m.transaction_result,
                                            m.coordinator_epoch)
                errors[topic, p] = E.NOT_LEADER_OR_FOLLOWER if error in _SHARD_NOT_READY else error
                continue
            try:
                plane.led(ctx, topic, p)
            except TopicsError as e:
                errors[topic, p] = e.error_code
                continue
            if -1 in (m.producer_id, m.producer_epoch):     # Kafka cannot build such a marker: the
                raise Refused(E.UNKNOWN_SERVER_ERROR, "no producer id or epoch")   # whole request fails
            errors[topic, p] = plane.write_marker(topic, p, m.producer_id, m.producer_epoch, m.transaction_result,
                                                  m.coordinator_epoch, m.transaction_version)
    return answer(results, concurrent=True)
