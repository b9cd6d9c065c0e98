"""The transaction APIs on the wire (Kafka's KafkaApis handlers): InitProducerId,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions. The API
version names the transaction version, as in Kafka: EndTxn v5 and AddPartitionsToTxn v4+ speak
version 2 (an epoch bump at every end), the earlier versions version 1.

They turn requests into calls of :class:`TransactionService` and its answers into responses,
with the version rules of Kafka's API layer: clients older than PRODUCER_FENCED (InitProducerId
before v4, the others before v2) are told INVALID_PRODUCER_EPOCH instead, and an
AddPartitionsToTxn naming a partition that does not exist adds none of them.
"""

from __future__ import annotations

from coordinator.java_order import (grown_capacity, hash_map_order, iteration_order, topic_partition_hash,
                                    transaction_partitions_order)
from protocol import error_answers
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from security.authorization import Authorization

from broker.api_spec import ApiSpec, Runs
from broker.cluster.topology import Topology
from broker.data.errors import Refused
from broker.txn_runtime.service import TransactionService

E = ErrorCode
InitProducerId = RESPONSES[ApiKey.INIT_PRODUCER_ID].cls
AddPartitions = RESPONSES[ApiKey.ADD_PARTITIONS_TO_TXN].cls
AddOffsets = RESPONSES[ApiKey.ADD_OFFSETS_TO_TXN].cls
EndTxn = RESPONSES[ApiKey.END_TXN].cls
DescribeTransactions = RESPONSES[ApiKey.DESCRIBE_TRANSACTIONS].cls
ListTransactions = RESPONSES[ApiKey.LIST_TRANSACTIONS].cls
#: the first version of each API that knows PRODUCER_FENCED
_FENCED_SINCE = {ApiKey.INIT_PRODUCER_ID: 4, ApiKey.ADD_PARTITIONS_TO_TXN: 2,
                 ApiKey.ADD_OFFSETS_TO_TXN: 2, ApiKey.END_TXN: 2}
#: the first EndTxn version of transaction version 2
TV2_END_TXN = 5


def for_version(api_key: int, version: int, error: ErrorCode) -> ErrorCode:
    if error == E.PRODUCER_FENCED and version < _FENCED_SINCE[api_key]:
        return E.INVALID_PRODUCER_EPOCH
    return error


def _txn(key: ApiKey, handler: str, failed, authorize, **more) -> ApiSpec:
    return ApiSpec(key, Runs.TRANSACTION_COORDINATOR, handler, failed, authorize, **more)


#: The transaction coordinator's APIs, answered by :class:`TransactionApis` (TxnOffsetCommit is
#: the group coordinator's).
TXN_APIS = (
    _txn(ApiKey.INIT_PRODUCER_ID, "init_producer_id", error_answers.init_producer_id,
         Authorization.init_producer_id, injectable=True),
    _txn(ApiKey.ADD_PARTITIONS_TO_TXN, "add_partitions_to_txn", error_answers.add_partitions_to_txn,
         Authorization.add_partitions_to_txn, injectable=True),
    _txn(ApiKey.ADD_OFFSETS_TO_TXN, "add_offsets_to_txn", error_answers.top_level(ApiKey.ADD_OFFSETS_TO_TXN),
         Authorization.add_offsets_to_txn, injectable=True),
    _txn(ApiKey.END_TXN, "end_txn", error_answers.top_level(ApiKey.END_TXN), Authorization.transactional_write,
         injectable=True),
    _txn(ApiKey.DESCRIBE_TRANSACTIONS, "describe_transactions", error_answers.describe_transactions,
         Authorization.describe_transactions),
    _txn(ApiKey.LIST_TRANSACTIONS, "list_transactions", error_answers.top_level(ApiKey.LIST_TRANSACTIONS),
         Authorization.list_transactions),
)


class TransactionApis:
    """``allocate`` hands out idempotent producers' ids; ``partition_exists(topic, p)`` and
    ``group_partition(group_id)`` (its ``__consumer_offsets`` partition) come from the broker;
    in a cluster, a node answers only for the ids whose ``__transaction_state`` partition it
    leads (``topology``), and NOT_COORDINATOR for the others, as Kafka does."""

    def __init__(self, service: TransactionService, allocate, partition_exists, group_partition,
                 topology: Topology):
        self.service, self.allocate = service, allocate
        self.partition_exists, self.group_partition = partition_exists, group_partition
        self.topology = topology

    async def init_producer_id(self, ctx, req):
        """Kafka's handleInitProducerIdRequest: an idempotent producer (no transactional id)
        always gets a new producer id at epoch 0, whatever id and epoch it names."""
        if (req.producer_id == -1) != (req.producer_epoch == -1):
            raise Refused(E.INVALID_REQUEST, "producer id and epoch are both set or both -1")
        if req.transactional_id is None:
            return InitProducerId(error_code=E.NONE, producer_id=self.allocate(), producer_epoch=0)
        expected = None if req.producer_id == -1 else (req.producer_id, req.producer_epoch)
        if self._elsewhere(ctx, req.transactional_id):
            return InitProducerId(error_code=E.NOT_COORDINATOR, producer_id=-1, producer_epoch=-1)
        d = await self.service.init_producer_id(req.transactional_id, req.transaction_timeout_ms, expected)
        error = for_version(ctx.api_key, ctx.version, d.error)
        if error != E.NONE:
            return InitProducerId(error_code=error, producer_id=-1, producer_epoch=-1)
        return InitProducerId(error_code=E.NONE, producer_id=d.producer_id, producer_epoch=d.producer_epoch)

    async def add_partitions_to_txn(self, ctx, req):
        """Versions 0-3 are a producer's; v4+ a broker's batch (Kafka's partition leaders verify
        or, for transaction version 2, add a produce's partitions with it)."""
        if ctx.version >= 4:
            return await self._add_partitions_batch(ctx, req)
        wanted = [(t.name, p) for t in req.v3_and_below_topics for p in t.partitions]
        errors = await self._add_or_verify(ctx, req.v3_and_below_transactional_id, req.v3_and_below_producer_id,
                                           req.v3_and_below_producer_epoch, wanted, verify_only=False)
        return AddPartitions(results_by_topic_v3_and_below=_topic_results(errors))

    async def _add_partitions_batch(self, ctx, req):
        """Each transaction in turn: verified (``verify_only``) or added in transaction version 2;
        a transaction naming a partition that does not exist adds none of its partitions."""
        results = []
        for txn in req.transactions:
            if txn.transactional_id is None:
                raise Refused(E.INVALID_REQUEST, "Transactional ID can not be null in request.")
            wanted = [(t.name, p) for t in txn.topics for p in t.partitions]
            errors = await self._add_or_verify(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                                               wanted, verify_only=txn.verify_only)
            results.append(AddPartitions.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                                  topic_results=_topic_results(errors)))
        return AddPartitions(error_code=E.NONE, results_by_transaction=tuple(results))

    async def _add_or_verify(self, ctx, tid: str, producer_id: int, epoch: int, wanted, *,
                             verify_only: bool) -> dict[tuple[str, int], ErrorCode]:
        missing = {tp for tp in wanted if not self.partition_exists(*tp)}
        if missing:
            return _hashed({tp: E.UNKNOWN_TOPIC_OR_PARTITION if tp in missing else E.OPERATION_NOT_ATTEMPTED
                            for tp in wanted})
        if self._elsewhere(ctx, tid):
            return dict.fromkeys(wanted, E.NOT_COORDINATOR)
        if verify_only:
            return _hashed(self.service.verify_partitions(tid, producer_id, epoch, wanted))
        error = await self.service.add_partitions(tid, producer_id, epoch, wanted,
                                                  2 if ctx.version >= 4 else 0)
        return dict.fromkeys(wanted, for_version(ctx.api_key, ctx.version, error))

    async def add_offsets_to_txn(self, ctx, req):
        if self._elsewhere(ctx, req.transactional_id):
            return AddOffsets(error_code=E.NOT_COORDINATOR)
        error = await self.service.add_partitions(req.transactional_id, req.producer_id, req.producer_epoch,
                                                  [self.group_partition(req.group_id)])
        return AddOffsets(error_code=for_version(ctx.api_key, ctx.version, error))

    async def end_txn(self, ctx, req):
        """v5 is transaction version 2's end (an epoch bump): its answer names the producer id
        and epoch to go on with (-1 with an error)."""
        if self._elsewhere(ctx, req.transactional_id):
            return EndTxn(error_code=E.NOT_COORDINATOR)
        d = await self.service.end_transaction(req.transactional_id, req.producer_id, req.producer_epoch,
                                               req.committed, client_tv=2 if ctx.version >= TV2_END_TXN else 0)
        if d.error != E.NONE:
            return EndTxn(error_code=for_version(ctx.api_key, ctx.version, d.error))
        return EndTxn(error_code=E.NONE, producer_id=d.producer_id, producer_epoch=d.producer_epoch)

    async def describe_transactions(self, ctx, req):
        state_cls = DescribeTransactions.TransactionState
        topic_cls = state_cls.TopicData
        states = []
        for tid in req.transactional_ids:
            found = E.NOT_COORDINATOR if self._elsewhere(ctx, tid) else self.service.describe(tid)
            if isinstance(found, ErrorCode):
                states.append(state_cls(error_code=found, transactional_id=tid))
                continue
            by_topic: dict[str, list[int]] = {}
            for topic, p in transaction_partitions_order(sorted(found.partitions)):
                by_topic.setdefault(topic, []).append(p)
            states.append(state_cls(
                error_code=E.NONE, transactional_id=tid, transaction_state=found.state.display,
                transaction_timeout_ms=found.timeout_ms, transaction_start_time_ms=found.start_ms,
                producer_id=found.producer_id, producer_epoch=found.producer_epoch,
                topics=tuple(topic_cls(topic=t, partitions=tuple(ps)) for t, ps in by_topic.items())))
        return DescribeTransactions(transaction_states=tuple(states))

    async def list_transactions(self, ctx, req):
        """Kafka's handleListTransactionsRequest: v1 adds the duration filter, v2 the
        transactional id pattern (KIP-1152)."""
        duration = req.duration_filter if ctx.version >= 1 else -1
        pattern = req.transactional_id_pattern if ctx.version >= 2 else None
        found = self.service.list(set(req.producer_id_filters), set(req.state_filters), duration, pattern)
        if isinstance(found, ErrorCode):
            return ListTransactions(error_code=found)
        rows, unknown = found
        rows = [r for r in rows if not self._elsewhere(ctx, r.transactional_id)]   # this node's only
        row_cls = ListTransactions.TransactionState
        return ListTransactions(error_code=E.NONE, unknown_state_filters=tuple(unknown),
                                transaction_states=tuple(
                                    row_cls(transactional_id=r.transactional_id, producer_id=r.producer_id,
                                            transaction_state=r.state.display) for r in rows))


    def _elsewhere(self, ctx, tid: str) -> bool:
        """Whether another node coordinates ``tid`` (its ``__transaction_state`` partition)."""
        return not self.topology.single and self.topology.transaction_coordinator(
            self.service.coordinator.partition_for(tid)) != ctx.node_id


def _hashed(errors: dict[tuple[str, int], ErrorCode]) -> dict[tuple[str, int], ErrorCode]:
    """Per-partition errors in the order Kafka answers those it files in a hash map of
    partitions (refused partitions, a verification's verdicts), by topic in a map of names."""
    ordered = iteration_order(list(errors), lambda tp: topic_partition_hash(*tp), grown_capacity(len(errors)))
    topics = hash_map_order(list(dict.fromkeys(t for t, _ in ordered)))
    return {tp: errors[tp] for topic in topics for tp in ordered if tp[0] == topic}


def _topic_results(errors: dict[tuple[str, int], ErrorCode]) -> tuple:
    """Partition errors grouped by topic, in the order they come."""
    topic_cls = AddPartitions.AddPartitionsToTxnTopicResult
    part_cls = topic_cls.AddPartitionsToTxnPartitionResult
    by_topic: dict[str, list] = {}
    for (topic, p), error in errors.items():
        by_topic.setdefault(topic, []).append(part_cls(partition_index=p, partition_error_code=error))
    return tuple(topic_cls(name=t, results_by_partition=tuple(ps)) for t, ps in by_topic.items())
