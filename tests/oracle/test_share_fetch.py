"""ShareFetch and ShareAcknowledge against Apache Kafka: share sessions and their epochs, records
acquired under a lock and acknowledged (accept, release, reject), delivery counts, the errors of
each misuse, field by field."""

import dataclasses

from protocol.api_keys import ApiKey
from tests.oracle.steps import batch, produce_body, req, sub, unique
from tests.support.differential import Alias
from tests.oracle.test_share_groups import MEMBER, assigned, beat, topic_for_groups

FETCH, ACK = ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE
ACCEPT, RELEASE, REJECT = 1, 2, 3


def acks(*batches):
    return tuple(sub(FETCH, "AcknowledgementBatch", first_offset=f, last_offset=l, acknowledge_types=tuple(t))
                 for f, l, t in batches)


def fetch(group, topic_id, epoch, *, member=MEMBER, partitions=(0,), ack=(), wait_ms=0, min_bytes=1,
          max_records=500, forgotten=()):
    parts = tuple(sub(FETCH, "FetchPartition", partition_index=p, acknowledgement_batches=acks(*ack) if ack else ())
                  for p in partitions)
    return req(FETCH, group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=wait_ms,
               min_bytes=min_bytes, max_bytes=1 << 20, max_records=max_records, batch_size=max_records,
               topics=(sub(FETCH, "FetchTopic", topic_id=topic_id, partitions=parts),) if partitions else (),
               forgotten_topics_data=forgotten)


def acknowledge(group, topic_id, epoch, ack, *, member=MEMBER, partition=0):
    return req(ACK, group_id=group, member_id=member, share_session_epoch=epoch, topics=(
        sub(ACK, "AcknowledgeTopic", topic_id=topic_id, partitions=(
            sub(ACK, "AcknowledgePartition", partition_index=partition, acknowledgement_batches=tuple(
                sub(ACK, "AcknowledgementBatch", first_offset=f, last_offset=l, acknowledge_types=tuple(t))
                for f, l, t in ack)),)),))


async def member_of(oracle, group, topic) -> object:
    """A share member assigned the topic's partitions on both brokers; the topic id (aliased)."""
    first = await oracle.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, beat(group, topics=(topic,)), what="joins")
    answer = await assigned(oracle, group, MEMBER, first["member_epoch"], "assigned", topics=(topic,))
    return Alias(answer["assignment"]["topic_partitions"][0]["topic_id"])


async def records_in(oracle, group, topic_id, epoch, what):
    """ShareFetch until both brokers deliver something (a long poll of 2 s each)."""
    return await oracle.call(FETCH, 1, fetch(group, topic_id, epoch, wait_ms=2000), what=what)


async def test_fetch_acknowledge_and_redeliver(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    topic_id = await member_of(oracle, group, topic)
    # (a wait: Kafka reads the share-partition's state from its share coordinator first, and a
    # fetch that cannot wait may answer before it has)
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=300),
                      what="a session opens; the share-partition starts at the end")
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"a", b"b", b"c"])), what="three records")
    await records_in(oracle, group, topic_id, 1, "the three records, delivered once")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 2, [(0, 0, [ACCEPT]), (1, 1, [RELEASE]), (2, 2, [REJECT])]),
                      what="accept, release, reject")
    await records_in(oracle, group, topic_id, 3, "the released record again, delivered twice")
    await oracle.call(FETCH, 1, fetch(group, topic_id, 4, ack=[(1, 1, [ACCEPT])]), what="accepted within a fetch")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 5, [(0, 0, [ACCEPT])]), what="already acknowledged")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 6, [(7, 9, [ACCEPT])]), what="past the records")
    await oracle.call(FETCH, 1, fetch(group, topic_id, -1, partitions=()), what="the session closes")


async def test_session_errors(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    topic_id = await member_of(oracle, group, topic)
    cases = {
        "no session yet": fetch(group, topic_id, 1),
        "closing no session": fetch(group, topic_id, -1),
        "acknowledging in a new session": fetch(group, topic_id, 0, ack=[(0, 0, [ACCEPT])]),
        "an empty member id": fetch(group, topic_id, 0, member=""),
        "no group id": fetch(None, topic_id, 0),
    }
    for what, body in cases.items():
        await oracle.call(FETCH, 1, body, what=what)
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 0, [(0, 0, [ACCEPT])]), what="acknowledge at epoch 0")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 1, [(0, 0, [ACCEPT])]), what="acknowledge without a session")
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=300), what="a session")
    await oracle.call(FETCH, 1, fetch(group, topic_id, 5), what="a wrong epoch")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 1, [(3, 1, [ACCEPT])]), what="a backwards range")
    await oracle.call(ACK, 2, acknowledge(group, topic_id, 2, [(0, 0, [4])]), what="a renew without the flag")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 3, [(0, 0, [ACCEPT])]), what="nothing acquired here")


DESCRIBE_OFFSETS = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS


def offsets_of(group, topics):
    return req(DESCRIBE_OFFSETS, groups=(sub(DESCRIBE_OFFSETS, "DescribeShareGroupOffsetsRequestGroup", group_id=group,
                                             topics=None if topics is None else tuple(
        sub(DESCRIBE_OFFSETS, "DescribeShareGroupOffsetsRequestTopic", topic_name=t, partitions=tuple(ps))
        for t, ps in topics)),))


async def test_describe_share_group_offsets(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    for version in (0, 1):
        await oracle.call(DESCRIBE_OFFSETS, version, offsets_of(group, None), what="a group that does not exist")
    topic_id = await member_of(oracle, group, topic)
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=300), what="a session")
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"a", b"b", b"c", b"d"])), what="records")
    await records_in(oracle, group, topic_id, 1, "delivered")
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 2, [(0, 1, [ACCEPT])]), what="two accepted")
    for version in (0, 1):
        await oracle.call(DESCRIBE_OFFSETS, version, offsets_of(group, [(topic, [0, 1])]), what="after an acknowledgement")
    # (not compared: a partition or topic without share state, which Kafka 4.3.1 does not answer
    # within 15 s; groupbroker answers start offset -1 at once)
    await oracle.call(ACK, 1, acknowledge(group, topic_id, 3, [(2, 3, [ACCEPT])]), what="the rest accepted")
    await oracle.call(DESCRIBE_OFFSETS, 1, offsets_of(group, None), what="every initialized partition",
                      unordered=("partitions",))


ALTER, DELETE = ApiKey.ALTER_SHARE_GROUP_OFFSETS, ApiKey.DELETE_SHARE_GROUP_OFFSETS


def alter(group, topics):
    return req(ALTER, group_id=group, topics=tuple(
        sub(ALTER, "AlterShareGroupOffsetsRequestTopic", topic_name=t, partitions=tuple(
            sub(ALTER, "AlterShareGroupOffsetsRequestPartition", partition_index=p, start_offset=o) for p, o in ps))
        for t, ps in topics))


def delete(group, *topics):
    return req(DELETE, group_id=group, topics=tuple(
        sub(DELETE, "DeleteShareGroupOffsetsRequestTopic", topic_name=t) for t in topics))


async def test_alter_and_delete_share_group_offsets(oracle, request):
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 2)
    await oracle.call(DELETE, 0, delete(group, topic), what="delete: no such group")
    await oracle.call(ALTER, 0, alter("", [(topic, [(0, 1)])]), what="alter: no group id")
    await oracle.call(ALTER, 0, alter(group, [(topic, [(0, 1), (1, 0), (7, 0)]), ("no-such-topic", [(0, 0)])]),
                      what="alter: a group that does not exist yet")
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"a", b"b", b"c", b"d"])), what="records")
    topic_id = await member_of(oracle, group, topic)
    await oracle.call(ALTER, 0, alter(group, [(topic, [(0, 2)])]), what="alter: a group with a member")
    await oracle.call(DELETE, 0, delete(group, topic), what="delete: a group with a member")
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=2000),
                      what="the first fetch starts at the altered offset")
    await oracle.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, beat(group, epoch=-1), what="the member leaves")
    await oracle.call(DELETE, 0, delete(group, topic, "no-such-topic"), what="delete: an empty group")
    await oracle.call(DELETE, 0, delete(group, topic), what="delete: nothing left to delete")


async def test_record_limit_acquire_mode(oracle, request):
    """ShareFetch v2 with ShareAcquireMode 1 (record_limit): at most MaxRecords records, the
    batch split to keep to it."""
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    topic_id = await member_of(oracle, group, topic)
    await oracle.call(FETCH, 2, fetch(group, topic_id, 0, wait_ms=300), what="a session")
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"%d" % i for i in range(7)])),
                      what="one batch of 7")
    limited = dataclasses.replace(fetch(group, topic_id, 1, wait_ms=2000, max_records=3), share_acquire_mode=1)
    await oracle.call(FETCH, 2, limited, what="3 of the batch's 7 records")
    await oracle.call(FETCH, 2, dataclasses.replace(limited, share_session_epoch=2), what="the next 3")
    await oracle.call(FETCH, 2, dataclasses.replace(limited, share_session_epoch=3, max_records=500),
                      what="the last one")


async def test_by_duration_reset(oracle, request):
    """share.auto.offset.reset=by_duration: a share-partition starts at the first record no older
    than the duration; while none is that recent, Kafka cannot start it and answers so."""
    import time
    from tests.oracle.test_admin import GROUP, IAC, SET, incremental
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    await oracle.call(IAC, 1, incremental((GROUP, group, [("share.auto.offset.reset", SET, "by_duration:PT10M")])),
                      what="by duration")
    now = int(time.time() * 1000)
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"old-a", b"old-b"], timestamp=now - 3_600_000)),
                      what="two records an hour old")
    topic_id = await member_of(oracle, group, topic)
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=300), what="no record recent enough")
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"new-c", b"new-d"], timestamp=now)),
                      what="two recent records")
    await records_in(oracle, group, topic_id, 1, "the recent records only")


async def test_find_share_state_coordinator(oracle, request):
    """FindCoordinator of share-state keys (key type 2, ``group:topic id:partition``, what
    brokers ask their share coordinator for): from v6 only, each key validated as Kafka's
    SharePartitionKey reads it; once ``__share_group_state`` exists (a share group's first
    state), the node leading the key's partition."""
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    topic_id = await member_of(oracle, group, topic)
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=300), what="share state initialized")
    keys = (f"{group}:AAAAAAAAAAAAAAAAAAAAAA:0", f"a:b:{group}:AAAAAAAAAAAAAAAAAAAAAQ:3", f"{group}:nope:0",
            f"{group}:AAAAAAAAAAAAAAAAAAAAAA:x", ":AAAAAAAAAAAAAAAAAAAAAA:0", f"{group}:0", "",
            f"{group}:AAAAAAAAAAAAAAAAAAAAAA:0:")
    for version in (4, 5, 6):
        await oracle.call(ApiKey.FIND_COORDINATOR, version, req(ApiKey.FIND_COORDINATOR, key_type=2,
                                                                coordinator_keys=keys), what="share-state keys")
    await oracle.call(ApiKey.FIND_COORDINATOR, 3, req(ApiKey.FIND_COORDINATOR, key_type=2, key=keys[0]),
                      what="a share-state key before v4")


async def test_a_release_within_a_waiting_fetch(oracle, request):
    """A ShareFetch that waits and releases a record in its own acknowledgements: not taken by
    the fetch's first try (the release is still being written); once written, Kafka completes
    the waiting fetch if the share-partition's start offset moved, which takes the record again;
    if it did not move, the fetch waits on and ends empty."""
    group, topic = unique(request), unique(request, "-t")
    await topic_for_groups(oracle, topic, 1)
    topic_id = await member_of(oracle, group, topic)
    await oracle.call(FETCH, 1, fetch(group, topic_id, 0, wait_ms=300), what="a session")
    await oracle.call(ApiKey.PRODUCE, 11, produce_body(topic, 0, batch([b"a", b"b", b"c", b"d"])), what="records")
    await records_in(oracle, group, topic_id, 1, "four records")
    await oracle.call(FETCH, 1, fetch(group, topic_id, 2, ack=[(2, 2, [RELEASE])], wait_ms=700),
                      what="a release that does not move the start offset")
    await oracle.call(FETCH, 1, fetch(group, topic_id, 3, ack=[(0, 1, [ACCEPT]), (3, 3, [RELEASE])], wait_ms=5000),
                      what="acceptances that move the start offset, and a release")
