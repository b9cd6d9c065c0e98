"""Group APIs: route each group to its shard's runner; split and merge the multi-group ones.

FindCoordinator names the node that owns the group's shard (in a cluster, the leader of its
``__consumer_offsets`` partition; a transactional id's, of its ``__transaction_state``
partition); any other node answers the group's requests NOT_COORDINATOR, as Kafka does.
DescribeGroups,
DeleteGroups and OffsetFetch v8+ carry several groups: each shard gets the part naming its
groups, the shards work concurrently, and the answers are put back in request order.
ListGroups asks every shard.
"""

from __future__ import annotations

import dataclasses
import logging
from functools import partial
from typing import Callable

import trio

from coordinator.responses import error_response
from coordinator.routing import shard_for
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from broker.cluster.topology import NO_LEADER, Topology
from broker.group_runtime.shard_runner import ShardRunner, Ticket

log = logging.getLogger("groupbroker.groups")

FindCoordinatorResponse = RESPONSES[ApiKey.FIND_COORDINATOR].cls
_COMMIT_TOPIC = RESPONSES[ApiKey.OFFSET_COMMIT].cls.OffsetCommitResponseTopic
_DELETE_TOPIC = RESPONSES[ApiKey.OFFSET_DELETE].cls.OffsetDeleteResponseTopic
_TXN_COMMIT_TOPIC = RESPONSES[ApiKey.TXN_OFFSET_COMMIT].cls.TxnOffsetCommitResponseTopic
#: per-partition result classes of OffsetCommit and OffsetDelete
_RESULT_CLASSES = {
    ApiKey.OFFSET_COMMIT: (_COMMIT_TOPIC, _COMMIT_TOPIC.OffsetCommitResponsePartition),
    ApiKey.OFFSET_DELETE: (_DELETE_TOPIC, _DELETE_TOPIC.OffsetDeleteResponsePartition),
    ApiKey.TXN_OFFSET_COMMIT: (_TXN_COMMIT_TOPIC, _TXN_COMMIT_TOPIC.TxnOffsetCommitResponsePartition)}
PIPELINED_APIS = frozenset({ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_DELETE,
                            ApiKey.CONSUMER_GROUP_HEARTBEAT})
#: every group API (the router's table is checked against it)
GROUP_APIS = frozenset({ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP,
                        ApiKey.LEAVE_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT,
                        ApiKey.OFFSET_DELETE, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS,
                        ApiKey.DELETE_GROUPS, ApiKey.LIST_GROUPS,
                        ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
                        ApiKey.TXN_OFFSET_COMMIT})


class GroupRouter:
    def __init__(self, runners: list[ShardRunner], topology: Topology,
                 partition_exists: Callable[[str, int], bool], txn_partitions: int):
        self.runners, self.topology = runners, topology
        self.partition_exists, self.txn_partitions = partition_exists, txn_partitions
        #: the group APIs, each with the way it reaches its shards
        self.routes = {
            ApiKey.FIND_COORDINATOR: self._find_coordinator,
            ApiKey.JOIN_GROUP: self._single_group,
            ApiKey.SYNC_GROUP: self._single_group,
            ApiKey.LEAVE_GROUP: self._single_group,
            ApiKey.HEARTBEAT: self._pipelined,
            ApiKey.OFFSET_COMMIT: self._pipelined,
            ApiKey.OFFSET_DELETE: self._pipelined,
            ApiKey.TXN_OFFSET_COMMIT: self._pipelined,
            ApiKey.OFFSET_FETCH: self._offset_fetch,
            ApiKey.DESCRIBE_GROUPS: partial(self._split, field="groups", group_of=_itself,
                                            result_field="groups"),
            ApiKey.DELETE_GROUPS: partial(self._split, field="groups_names", group_of=_itself,
                                          result_field="results"),
            ApiKey.LIST_GROUPS: self._list_groups,
            ApiKey.CONSUMER_GROUP_HEARTBEAT: self._pipelined,
            ApiKey.CONSUMER_GROUP_DESCRIBE: partial(self._split, field="group_ids", group_of=_itself,
                                                    result_field="groups"),
        }
        assert set(self.routes) == GROUP_APIS, "the router's table and GROUP_APIS disagree"

    def runner_for(self, group_id: str) -> ShardRunner:
        return self.runners[shard_for(group_id, len(self.runners))]

    def _elsewhere(self, ctx, shard: int) -> bool:
        """Whether the shard is coordinated by another node than the one asked."""
        return not self.topology.single and self.topology.coordinator(shard) != ctx.node_id

    def _not_here(self, ctx, request):
        """The request's answer on a node that does not coordinate its group, or None."""
        if not self.topology.single and self._elsewhere(ctx, shard_for(request.group_id, len(self.runners))):
            return error_response(ctx.api_key, ctx.version, request, ErrorCode.NOT_COORDINATOR)
        return None

    async def handle(self, ctx, request):
        return await self.routes[ctx.api_key](ctx, request)

    async def _find_coordinator(self, ctx, request):
        return self.find_coordinator(ctx.version, request, ctx)

    async def _single_group(self, ctx, request):
        """A request that may park in its shard (a JoinGroup or SyncGroup) or leaves a group."""
        if (refused := self._not_here(ctx, request)) is not None:
            return refused
        return await self.runner_for(request.group_id).call(
            ctx.api_key, ctx.version, request, client_id=ctx.client_id,
            client_host=ctx.client_host, barriers=ctx.barriers)

    async def _pipelined(self, ctx, request):
        ticket, finish = self.begin(ctx, request)
        return finish(await ShardRunner.answer(ticket, ctx.barriers))

    async def _offset_fetch(self, ctx, request):
        """OffsetFetch names one group before v8 (pipelined), several from v8 on."""
        if self.pipelines(ctx.api_key, ctx.version):
            return await self._pipelined(ctx, request)
        return await self._split(ctx, request, "groups", lambda g: g.group_id, "groups")

    @staticmethod
    def pipelines(api_key: int, version: int) -> bool:
        """Single-group requests whose answer never waits for other members (unlike a
        JoinGroup or SyncGroup, which park): a connection may submit several at once."""
        return api_key in PIPELINED_APIS or (api_key == ApiKey.OFFSET_FETCH and version < 8)

    def begin(self, ctx, request) -> tuple[Ticket, Callable]:
        """Submit a pipelined request to its shard; returns its ticket and the function that
        turns the shard's answer into the response."""
        if (refused := self._not_here(ctx, request)) is not None:
            ticket = Ticket(ctx.api_key, ctx.version, request)
            ticket.settle(refused)
            return ticket, _unchanged
        runner = self.runner_for(request.group_id)
        if ctx.api_key not in _RESULT_CLASSES:          # not OffsetCommit or OffsetDelete
            return runner.submit(ctx.api_key, ctx.version, request, client_id=ctx.client_id,
                                 client_host=ctx.client_host), _unchanged
        # OffsetCommit/OffsetDelete: as Kafka's API layer does, answer partitions that do not
        # exist with UNKNOWN_TOPIC_OR_PARTITION and send only the rest to the coordinator. The
        # usual request names only partitions that exist: it goes on as it came.
        exists = self.partition_exists
        if all(t.partitions and all(exists(t.name, p.partition_index) for p in t.partitions)
               for t in request.topics):
            return runner.submit(ctx.api_key, ctx.version, request, client_id=ctx.client_id,
                                 client_host=ctx.client_host), _unchanged
        kept = tuple(dataclasses.replace(t, partitions=tuple(
            p for p in t.partitions if self.partition_exists(t.name, p.partition_index)))
            for t in request.topics)
        kept = tuple(t for t in kept if t.partitions)
        if ctx.api_key in (ApiKey.OFFSET_COMMIT, ApiKey.TXN_OFFSET_COMMIT) and not kept:
            ticket = Ticket(ctx.api_key, ctx.version, request)
            ticket.settle(RESPONSES[ctx.api_key].cls())
        else:
            ticket = runner.submit(ctx.api_key, ctx.version, dataclasses.replace(request, topics=kept),
                                   client_id=ctx.client_id, client_host=ctx.client_host)
        return ticket, partial(_with_unknown_partitions, ctx.api_key, request.topics)

    def find_coordinator(self, version: int, request, ctx):
        """Groups (key type 0) and transactional ids (1): the node leading the key's partition
        (COORDINATOR_NOT_AVAILABLE while none does); share groups (2) are not served, which
        Kafka answers INVALID_REQUEST."""
        topology = self.topology

        def answer(key: str, key_type: int) -> dict:
            if key_type == 0:
                node = topology.coordinator(shard_for(key, len(self.runners)))
            elif key_type == 1:
                node = topology.transaction_coordinator(shard_for(key, self.txn_partitions))
            else:
                return dict(error_code=ErrorCode.INVALID_REQUEST, node_id=-1, host="", port=-1,
                            error_message="groupbroker coordinates groups and transactions only")
            if node == NO_LEADER:
                return dict(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, node_id=-1, host="", port=-1)
            found = topology.node(node, ctx.listener)
            return dict(error_code=ErrorCode.NONE, node_id=node, host=found.host, port=found.port)

        if version < 4:
            return FindCoordinatorResponse(**answer(request.key, request.key_type))
        coordinator = FindCoordinatorResponse.Coordinator
        return FindCoordinatorResponse(coordinators=tuple(
            coordinator(key=k, **answer(k, request.key_type)) for k in request.coordinator_keys))

    async def _split(self, ctx, request, field: str, group_of, result_field: str):
        """Send each shard the items naming its groups; rebuild the answer in request order."""
        items = getattr(request, field)
        shards = [shard_for(group_of(item), len(self.runners)) for item in items]   # hashed once
        by_shard: dict[int, list] = {}
        for shard, item in zip(shards, items):
            by_shard.setdefault(shard, []).append(item)
        answers: dict[int, object] = {}

        async def ask(shard: int, part: list) -> None:
            sub = dataclasses.replace(request, **{field: tuple(part)})
            if self._elsewhere(ctx, shard):
                answers[shard] = error_response(ctx.api_key, ctx.version, sub, ErrorCode.NOT_COORDINATOR)
                return
            answers[shard] = await self.runners[shard].call(ctx.api_key, ctx.version, sub,
                                                            client_id=ctx.client_id,
                                                            barriers=ctx.barriers)

        async with trio.open_nursery() as nursery:
            for shard, part in by_shard.items():
                nursery.start_soon(ask, shard, part)
        queues = {shard: list(getattr(answer, result_field)) for shard, answer in answers.items()}
        for queue in queues.values():
            queue.reverse()                       # pop() from the end takes them in order
        merged = [queues[shard].pop() for shard in shards]
        template = next(iter(answers.values()), None)
        if template is None:
            return RESPONSES[ctx.api_key].cls()
        return dataclasses.replace(template, **{result_field: tuple(merged)})

    async def _list_groups(self, ctx, request):
        answers = [None] * len(self.runners)

        async def ask(i: int) -> None:
            answers[i] = await self.runners[i].call(ctx.api_key, ctx.version, request,
                                                    barriers=ctx.barriers)

        async with trio.open_nursery() as nursery:
            for i in range(len(self.runners)):
                if not self._elsewhere(ctx, i):       # a node lists the groups it coordinates
                    nursery.start_soon(ask, i)
        # As Kafka's GroupCoordinatorService: a shard that is not the coordinator (any more)
        # lists no groups; any other shard error (e.g. still loading) fails the whole answer.
        answers = [a for a in answers if a is not None and a.error_code != ErrorCode.NOT_COORDINATOR]
        error = next((a.error_code for a in answers if a.error_code != ErrorCode.NONE), ErrorCode.NONE)
        return RESPONSES[ApiKey.LIST_GROUPS].cls(
            error_code=error, groups=tuple(g for a in answers for g in a.groups))



def _unchanged(answer):
    return answer


def _itself(group_id: str) -> str:
    return group_id


def _with_unknown_partitions(api_key: int, topics, answer):
    """The shard's answer for the known partitions, completed in request order with
    UNKNOWN_TOPIC_OR_PARTITION for the others (unless the whole request failed)."""
    if getattr(answer, "error_code", ErrorCode.NONE) != ErrorCode.NONE:
        return answer
    errors = {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}
    topic_cls, part_cls = _RESULT_CLASSES[api_key]
    return dataclasses.replace(answer, topics=tuple(
        topic_cls(name=t.name, partitions=tuple(
            part_cls(partition_index=p.partition_index,
                     error_code=errors.get((t.name, p.partition_index), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            for p in t.partitions))
        for t in topics))
