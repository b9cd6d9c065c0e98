"""WriteTxnMarkers answers as Kafka lists them: the results grouped by producer id, then topic,
in the orders of the hash maps Kafka fills (ConcurrentHashMaps while it writes, HashMaps when it
refuses the whole request)."""

from __future__ import annotations

from coordinator.java_order import (concurrent_capacity, grown_capacity, iteration_order, long_hash, string_hash,
                                    table_size_for, topic_partition_hash)
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

WriteTxnMarkers = RESPONSES[ApiKey.WRITE_TXN_MARKERS].cls
_Topic = WriteTxnMarkers.WritableTxnMarkerResult.WritableTxnMarkerTopicResult
#: producer id -> (topic, partition) -> its error, in the order they were filled in
Results = dict[int, dict[tuple[str, int], ErrorCode]]


def failed(version: int, request, error: ErrorCode, message: str | None = None):
    """The whole request refused with ``error``: each partition of each marker (Kafka keeps the
    last marker of a producer id named twice, and the empty ones)."""
    results: Results = {}
    for m in request.markers:
        results[m.producer_id] = {(t.name, p): error for t in m.topics for p in t.partition_indexes}
    return answer(results, concurrent=False, pid_table=table_size_for(len(request.markers)))


def answer(results: Results, *, concurrent: bool, pid_table: int = 16):
    """``results`` in Kafka's order: ``concurrent`` for the maps filled while writing (the
    producer ids' map starts at ``pid_table`` entries otherwise)."""
    capacity = concurrent_capacity if concurrent else grown_capacity
    markers = []
    pids = capacity(len(results)) if concurrent else grown_capacity(len(results), pid_table)
    for pid in iteration_order(list(results), long_hash, pids):
        errors = results[pid]
        topics: dict[str, list] = {}
        for topic, p in iteration_order(list(errors), lambda tp: topic_partition_hash(*tp), capacity(len(errors))):
            topics.setdefault(topic, []).append(_Topic.WritableTxnMarkerPartitionResult(
                partition_index=p, error_code=errors[topic, p]))
        names = iteration_order(list(topics), string_hash, grown_capacity(len(topics)))
        markers.append(WriteTxnMarkers.WritableTxnMarkerResult(
            producer_id=pid, topics=tuple(_Topic(name=n, partitions=tuple(topics[n])) for n in names)))
    return WriteTxnMarkers(markers=tuple(markers))
