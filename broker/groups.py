"""Group APIs: route each group to its shard's runner; split and merge the multi-group ones.

FindCoordinator answers this node for every group (we host all 50 shards). DescribeGroups,
DeleteGroups and OffsetFetch v8+ carry several groups: each shard gets the part naming its
groups, the shards work concurrently, and the answers are put back in request order.
ListGroups asks every shard.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import trio

from coordinator.routing import shard_for
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from .shard_runner import ShardRunner

FindCoordinatorResponse = RESPONSES[10].cls
_COMMIT_TOPIC = RESPONSES[8].cls.OffsetCommitResponseTopic
_DELETE_TOPIC = RESPONSES[47].cls.OffsetDeleteResponseTopic
#: per-partition result classes of OffsetCommit (8) and OffsetDelete (47)
_RESULT_CLASSES = {8: (_COMMIT_TOPIC, _COMMIT_TOPIC.OffsetCommitResponsePartition),
                   47: (_DELETE_TOPIC, _DELETE_TOPIC.OffsetDeleteResponsePartition)}
SINGLE_GROUP_APIS = (11, 14, 12, 13, 8, 47)     # Join, Sync, Heartbeat, Leave, OffsetCommit, OffsetDelete


class GroupRouter:
    def __init__(self, runners: list[ShardRunner], node_id: int, advertised: tuple[str, int],
                 partition_exists: Callable[[str, int], bool]):
        self.runners, self.node_id, self.advertised = runners, node_id, advertised
        self.partition_exists = partition_exists

    def runner_for(self, group_id: str) -> ShardRunner:
        return self.runners[shard_for(group_id, len(self.runners))]

    async def handle(self, ctx, request):
        key, v = ctx.api_key, ctx.version
        if key == 10:
            return self.find_coordinator(v, request)
        if key in (8, 47):
            return await self._known_partitions_only(ctx, request)
        if key in SINGLE_GROUP_APIS or (key == 9 and v < 8):
            return await self.runner_for(request.group_id).call(
                key, v, request, client_id=ctx.client_id, client_host=ctx.client_host,
                barriers=ctx.barriers)
        if key == 15:
            return await self._split(ctx, request, "groups", lambda g: g, "groups")
        if key == 42:
            return await self._split(ctx, request, "groups_names", lambda g: g, "results")
        if key == 9:
            return await self._split(ctx, request, "groups", lambda g: g.group_id, "groups")
        if key == 16:
            return await self._list_groups(ctx, request)
        raise KeyError(f"api key {key} is not a group API")

    async def _known_partitions_only(self, ctx, request):
        """OffsetCommit/OffsetDelete: as Kafka's API layer does, answer partitions that do not
        exist with UNKNOWN_TOPIC_OR_PARTITION and send only the rest to the coordinator."""
        kept = tuple(dataclasses.replace(t, partitions=tuple(
            p for p in t.partitions if self.partition_exists(t.name, p.partition_index)))
            for t in request.topics)
        kept = tuple(t for t in kept if t.partitions)
        response_cls = RESPONSES[ctx.api_key].cls
        if ctx.api_key == 8 and not kept:
            answer = response_cls()
        else:
            answer = await self.runner_for(request.group_id).call(
                ctx.api_key, ctx.version, dataclasses.replace(request, topics=kept),
                client_id=ctx.client_id, client_host=ctx.client_host, barriers=ctx.barriers)
        if kept == request.topics or getattr(answer, "error_code", ErrorCode.NONE) != ErrorCode.NONE:
            return answer
        errors = {(t.name, p.partition_index): p.error_code for t in answer.topics for p in t.partitions}
        topic_cls, part_cls = _RESULT_CLASSES[ctx.api_key]
        return dataclasses.replace(answer, topics=tuple(
            topic_cls(name=t.name, partitions=tuple(
                part_cls(partition_index=p.partition_index,
                         error_code=errors.get((t.name, p.partition_index),
                                               ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                for p in t.partitions))
            for t in request.topics))

    def find_coordinator(self, version: int, request):
        host, port = self.advertised

        def answer(key_type: int) -> dict:
            if key_type == 0:
                return dict(error_code=ErrorCode.NONE, node_id=self.node_id, host=host, port=port)
            error = ErrorCode.COORDINATOR_NOT_AVAILABLE if key_type == 1 else ErrorCode.INVALID_REQUEST
            return dict(error_code=error, node_id=-1, host="", port=-1,
                        error_message="groupbroker hosts consumer groups only")

        if version < 4:
            return FindCoordinatorResponse(**answer(request.key_type))
        coordinator = FindCoordinatorResponse.Coordinator
        return FindCoordinatorResponse(coordinators=tuple(
            coordinator(key=k, **answer(request.key_type)) for k in request.coordinator_keys))

    async def _split(self, ctx, request, field: str, group_of, result_field: str):
        """Send each shard the items naming its groups; rebuild the answer in request order."""
        items = getattr(request, field)
        by_shard: dict[int, list] = {}
        for item in items:
            by_shard.setdefault(shard_for(group_of(item), len(self.runners)), []).append(item)
        answers: dict[int, object] = {}

        async def ask(shard: int, part: list) -> None:
            sub = dataclasses.replace(request, **{field: tuple(part)})
            answers[shard] = await self.runners[shard].call(ctx.api_key, ctx.version, sub,
                                                            client_id=ctx.client_id,
                                                            barriers=ctx.barriers)

        async with trio.open_nursery() as nursery:
            for shard, part in by_shard.items():
                nursery.start_soon(ask, shard, part)
        queues = {shard: list(getattr(answer, result_field)) for shard, answer in answers.items()}
        merged = [queues[shard_for(group_of(item), len(self.runners))].pop(0) for item in items]
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
                nursery.start_soon(ask, i)
        error = next((a.error_code for a in answers if a.error_code != ErrorCode.NONE), ErrorCode.NONE)
        return RESPONSES[16].cls(error_code=error, groups=tuple(g for a in answers for g in a.groups))

