"""Incremental fetch sessions (broker/data/fetch_sessions.py): which partitions a Fetch reads,
which its answer carries, and the session errors, as Kafka's FetchManager decides them."""

from __future__ import annotations

import itertools

from broker.data.fetch_sessions import FetchSessions
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS, RESPONSES

Request = REQUESTS[ApiKey.FETCH].cls
Part = RESPONSES[ApiKey.FETCH].cls.FetchableTopicResponse.PartitionData
NODE = 0


def fetch(partitions: dict, *, session_id=0, epoch=0, forgotten=()):
    """A v12 Fetch of topic "t": {partition: offset}; ``forgotten`` partitions of "t"."""
    t = Request.FetchTopic
    return Request(max_wait_ms=0, min_bytes=0, session_id=session_id, session_epoch=epoch, topics=(
        t(topic="t", partitions=tuple(t.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=100)
                                      for p, o in partitions.items())),) if partitions else (),
        forgotten_topics_data=(Request.ForgottenTopic(topic="t", partitions=tuple(forgotten)),) if forgotten else ())


def answered(context, records=(), high_watermark=5, errors=()):
    """Each partition the context reads, answered: records for those in ``records``."""
    return [(key, Part(partition_index=key[1], error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if key[1] in errors
                       else ErrorCode.NONE, high_watermark=high_watermark, log_start_offset=0,
                       records=b"r" if key[1] in records else b""))
            for key, _ in context.partitions]


def sessions():
    ids = itertools.count(100)
    return FetchSessions(slots=2, rng=lambda: next(ids))


def test_a_full_fetch_makes_a_session_and_an_incremental_one_carries_what_changed():
    cache = sessions()
    full = cache.context(NODE, 12, fetch({0: 0, 1: 0}), now_ms=0)
    session_id, sent = cache.respond(full, NODE, 12, answered(full, records={0}), now_ms=0)
    assert session_id == 100 and [key for key, _ in sent] == [("t", 0), ("t", 1)]
    nothing = cache.context(NODE, 12, fetch({}, session_id=100, epoch=1), now_ms=1)
    assert [key for key, _ in nothing.partitions] == [("t", 0), ("t", 1)]      # the session's partitions are read
    assert cache.respond(nothing, NODE, 12, answered(nothing), now_ms=1) == (100, [])
    news = cache.context(NODE, 12, fetch({0: 1}, session_id=100, epoch=2), now_ms=2)
    assert news.partitions[0][1].request.fetch_offset == 1                      # the request updates the session
    _, sent = cache.respond(news, NODE, 12, answered(news, records={0}, high_watermark=6), now_ms=2)
    assert [key for key, _ in sent] == [("t", 0), ("t", 1)]                     # a new high watermark for both
    moved = cache.context(NODE, 12, fetch({}, session_id=100, epoch=3), now_ms=3)
    assert [key for key, _ in moved.partitions] == [("t", 1), ("t", 0)]         # what brought records goes last


def test_session_errors():
    cache = sessions()
    full = cache.context(NODE, 12, fetch({0: 0}), now_ms=0)
    cache.respond(full, NODE, 12, answered(full), now_ms=0)
    assert cache.context(NODE, 12, fetch({}, session_id=100, epoch=5), 1).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.context(NODE, 12, fetch({}, session_id=7, epoch=1), 1).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.context(1, 12, fetch({}, session_id=100, epoch=1), 1).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.context(NODE, 13, fetch({}, session_id=100, epoch=1), 1).error == \
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_epoch_minus_one_closes_the_session_and_forgetting_every_partition_ends_it():
    cache = sessions()
    for _ in range(2):
        full = cache.context(NODE, 12, fetch({0: 0}), now_ms=0)
        cache.respond(full, NODE, 12, answered(full), now_ms=0)
    closing = cache.context(NODE, 12, fetch({0: 0}, session_id=100, epoch=-1), now_ms=1)
    assert closing.kind == "sessionless" and 100 not in cache.sessions
    assert cache.respond(closing, NODE, 12, answered(closing), now_ms=1)[0] == 0
    emptied = cache.context(NODE, 12, fetch({}, session_id=101, epoch=1, forgotten=[0]), now_ms=1)
    assert emptied.kind == "sessionless" and not cache.sessions


def test_a_full_cache_evicts_a_stale_session_or_a_smaller_one():
    cache = sessions()
    for partitions in ({0: 0, 1: 0}, {0: 0}):
        full = cache.context(NODE, 12, fetch(partitions), now_ms=0)
        cache.respond(full, NODE, 12, answered(full), now_ms=0)
    single = cache.context(NODE, 12, fetch({2: 0}), now_ms=10)
    assert cache.respond(single, NODE, 12, answered(single), now_ms=10)[0] == 102      # evicts 101, as small
    assert set(cache.sessions) == {100, 102}
    none = cache.context(NODE, 12, fetch({}), now_ms=20)
    assert cache.respond(none, NODE, 12, [], now_ms=20)[0] == 0                        # smaller than any
    late = cache.context(NODE, 12, fetch({}), now_ms=200_000)
    assert cache.respond(late, NODE, 12, [], now_ms=200_000)[0] == 103                 # 100 had gone stale
