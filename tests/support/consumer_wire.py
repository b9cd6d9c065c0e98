"""KIP-848 members driven over a real socket (ConsumerGroupHeartbeat v1 with our own client),
for tests against a broker in the test's trio run (``serve_broker``)."""

from __future__ import annotations

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

CGH = REQUESTS[ApiKey.CONSUMER_GROUP_HEARTBEAT].cls
CGD = REQUESTS[ApiKey.CONSUMER_GROUP_DESCRIBE].cls


async def create_topic(client, name: str, partitions: int) -> None:
    ct = REQUESTS[ApiKey.CREATE_TOPICS].cls
    created = await client.call(ApiKey.CREATE_TOPICS, 5, ct(topics=(ct.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=(), configs=()),)))
    assert created.topics[0].error_code == ErrorCode.NONE, created


def owned(assignment: dict) -> tuple:
    """TopicPartitions from {topic id: partitions}."""
    return tuple(CGH.TopicPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                 for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])) if ps)


def assignment_of(response) -> dict | None:
    """{topic id: partitions} of a heartbeat answer, None when it carries no assignment."""
    if response.assignment is None:
        return None
    return {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            if tp.partitions}


async def heartbeat(client, group: str, member: str, epoch: int, *, topics=None, owned_now=None,
                    instance: str | None = None, rebalance_timeout_ms: int = -1):
    """One ConsumerGroupHeartbeat v1 (the member id is the client's own, KIP-1082)."""
    body = CGH(group_id=group, member_id=member, member_epoch=epoch, instance_id=instance,
               rebalance_timeout_ms=rebalance_timeout_ms,
               subscribed_topic_names=None if topics is None else tuple(topics),
               topic_partitions=owned_now)
    return await client.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)


class Member:
    """One consumer-protocol member: joins, heartbeats with what it owns, revokes at once
    (unless told to keep reporting what it holds)."""

    def __init__(self, client, group: str, member_id: str, topics: list[str], *,
                 instance: str | None = None, rebalance_timeout_ms: int = 30_000):
        self.client, self.group, self.member_id, self.topics = client, group, member_id, topics
        self.instance, self.rebalance_timeout_ms = instance, rebalance_timeout_ms
        self.epoch = 0
        self.assigned: dict = {}

    async def join(self):
        answer = await heartbeat(self.client, self.group, self.member_id, 0, topics=self.topics,
                                 owned_now=(), instance=self.instance,
                                 rebalance_timeout_ms=self.rebalance_timeout_ms)
        return self._took(answer)

    async def beat(self):
        """A heartbeat reporting the partitions it holds now."""
        answer = await heartbeat(self.client, self.group, self.member_id, self.epoch,
                                 owned_now=owned(self.assigned), instance=self.instance)
        return self._took(answer)

    def _took(self, answer):
        if answer.error_code == ErrorCode.NONE:
            self.epoch = answer.member_epoch
            got = assignment_of(answer)
            if got is not None:
                self.assigned = got
        return answer


async def describe(client, group: str):
    """The ConsumerGroupDescribe v1 answer for one group."""
    answer = await client.call(ApiKey.CONSUMER_GROUP_DESCRIBE, 1,
                               CGD(group_ids=(group,), include_authorized_operations=False))
    return answer.groups[0]


async def group_state(client, group: str) -> tuple[str, str] | None:
    """(type, state) of a group as ListGroups v5 lists it, None if it is not listed."""
    answer = await client.call(ApiKey.LIST_GROUPS, 5, REQUESTS[ApiKey.LIST_GROUPS].cls())
    return next(((g.group_type, g.group_state) for g in answer.groups if g.group_id == group), None)
