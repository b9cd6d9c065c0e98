"""A streams-group member (KIP-1071) on the wire: StreamsGroupHeartbeat with a one-subtopology
stateless topology over one input topic, its active tasks kept as a client keeps them (what it
is given it holds; what it must revoke it gives up at once)."""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS

Heartbeat = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls


def stateless(topic: str):
    sub = Heartbeat.Topology.Subtopology
    return Heartbeat.Topology(epoch=0, subtopologies=(sub(
        subtopology_id="0", source_topics=(topic,), source_topic_regex=(), state_changelog_topics=(),
        repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=()),))


class StreamsMember:
    def __init__(self, client, group: str, member_id: str, topic: str):
        self.client, self.group, self.member_id, self.topic = client, group, member_id, topic
        self.epoch, self.tasks = 0, []

    async def join(self):
        self.epoch, self.tasks = 0, []
        return await self.beat()

    async def beat(self):
        joining = self.epoch == 0
        owned = (Heartbeat.TaskIds(subtopology_id="0", partitions=tuple(self.tasks)),) if self.tasks else ()
        answer = await self.client.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, Heartbeat(
            group_id=self.group, member_id=self.member_id, member_epoch=self.epoch, endpoint_information_epoch=-1,
            rebalance_timeout_ms=30000 if joining else -1, topology=stateless(self.topic) if joining else None,
            active_tasks=owned, standby_tasks=(), warmup_tasks=(), process_id=self.member_id if joining else None))
        if answer.error_code == 0:
            self.epoch = answer.member_epoch
            if answer.active_tasks is not None:
                self.tasks = sorted(p for t in answer.active_tasks for p in t.partitions)
        return answer
