"""A share group member's raw requests over a TrioClient (issue 28's tests): join until
assigned, ShareFetch (with acknowledgements), and the ranges an answer acquired."""

from __future__ import annotations

import trio

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

SGH, SF = REQUESTS[ApiKey.SHARE_GROUP_HEARTBEAT].cls, REQUESTS[ApiKey.SHARE_FETCH].cls
ACCEPT, RELEASE, REJECT = 1, 2, 3


async def share_member(client, group: str, topic: str, member: str = "share-member-0001"):
    """A share member with its topic's partition assigned: (member epoch, topic id)."""
    epoch = 0
    with trio.fail_after(10):
        while True:
            answer = await client.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, SGH(
                group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=(topic,)))
            assert answer.error_code == ErrorCode.NONE, answer
            epoch = answer.member_epoch
            if answer.assignment.topic_partitions:
                return epoch, answer.assignment.topic_partitions[0].topic_id
            await trio.sleep(0.1)


async def share_fetch(client, group: str, topic_id, epoch: int, member: str = "share-member-0001", acks=(),
                      max_wait_ms: int = 2000):
    """ShareFetch of partition 0, acknowledging ``acks`` ((first, last, type), ...) with it."""
    part = SF.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=tuple(
        SF.FetchTopic.FetchPartition.AcknowledgementBatch(first_offset=f, last_offset=l, acknowledge_types=(t,))
        for f, l, t in acks))
    return await client.call(ApiKey.SHARE_FETCH, 1, SF(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_records=100, batch_size=100, topics=(SF.FetchTopic(topic_id=topic_id, partitions=(part,)),),
        forgotten_topics_data=()))


def acquired(answer) -> list[tuple[int, int, int]]:
    """(first offset, last offset, delivery count) of each range the answer acquired."""
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in answer.responses for p in t.partitions for a in p.acquired_records]
