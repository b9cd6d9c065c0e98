"""Incremental fetch sessions (KIP-227), as Kafka's FetchManager keeps them for consumers.

A Fetch from v7 names a session and an epoch. Epoch 0 asks for a new session: the answer is a
full one, and its session id (0 when the cache has no room) lets the next requests name only
the partitions that changed, at epochs 1, 2... An incremental answer leaves out the partitions
with nothing new (no records, no change of high watermark or log start offset, no error); a
partition that brought records moves to the end of the session, so the others get their turn
first next time. Epoch -1 closes the named session and fetches without one. A session unknown
to this node is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH, a
session made by name (before v13) and used by id (or the reverse) FETCH_SESSION_TOPIC_ID_ERROR.

Pure bookkeeping: the data plane reads the partitions a :class:`FetchContext` lists and hands
it the partition answers to shape into the response.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from protocol.errors import ErrorCode

INITIAL_EPOCH, FINAL_EPOCH, NO_SESSION = 0, -1, 0
#: Kafka's max.incremental.fetch.session.cache.slots and min.incremental.fetch.session.eviction.ms
CACHE_SLOTS, EVICTION_MS = 1000, 120_000
SESSIONS_SINCE, TOPIC_IDS_SINCE = 7, 13


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 0x7FFFFFFF else epoch + 1


@dataclass
class Cached:
    """What a session keeps of one partition: the request's fetch parameters (a FetchPartition)
    and what the last answer told (high watermark, log start offset)."""
    topic: str                      # the request's topic field (before v13)
    topic_id: object
    request: object
    high_watermark: int = -1
    log_start_offset: int = -1


@dataclass
class Session:
    id: int
    node_id: int
    by_id: bool                     # made by a request naming topics by id (v13+)
    partitions: OrderedDict = field(default_factory=OrderedDict)   # key -> Cached
    epoch: int = 1
    last_used_ms: int = 0


@dataclass
class FetchContext:
    """What one Fetch reads and how its answer is shaped. ``partitions``: (key, Cached) in the
    order they are read; ``error``: a session error answered instead of any read."""
    kind: str                       # "sessionless", "full", "incremental" or "error"
    partitions: list = field(default_factory=list)
    error: ErrorCode = ErrorCode.NONE
    session: Session | None = None


class FetchSessions:
    """Every node's sessions; ids are unique across nodes, a session answers only on its own."""

    def __init__(self, slots: int = CACHE_SLOTS, eviction_ms: int = EVICTION_MS,
                 rng: Callable[[], int] | None = None):
        self.slots, self.eviction_ms = slots, eviction_ms
        self._rng = rng or (lambda: random.randint(1, 0x7FFFFFFF))
        self.sessions: dict[int, Session] = {}

    def context(self, node_id: int, version: int, req, now_ms: int) -> FetchContext:
        """FetchManager.newContext for a consumer's Fetch."""
        given = [(key_of(version, t, p), Cached(t.topic, t.topic_id, p)) for t in req.topics for p in t.partitions]
        if version < SESSIONS_SINCE:
            return FetchContext("sessionless", given)
        if req.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):      # a full fetch closes the one named
            self._remove(node_id, req.session_id)
            return FetchContext("sessionless" if req.session_epoch == FINAL_EPOCH else "full", given)
        session = self.sessions.get(req.session_id)
        if session is None or session.node_id != node_id:
            return FetchContext("error", error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != req.session_epoch:
            return FetchContext("error", error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.by_id != (version >= TOPIC_IDS_SINCE):
            return FetchContext("error", error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        for key, cached in given:
            if key in session.partitions:
                session.partitions[key].request = cached.request
            else:
                session.partitions[key] = cached
        for t in req.forgotten_topics_data:
            for p in t.partitions:
                session.partitions.pop((t.topic_id if version >= TOPIC_IDS_SINCE else t.topic, p), None)
        if not session.partitions:
            del self.sessions[session.id]
            return FetchContext("sessionless", given)
        session.last_used_ms = now_ms
        session.epoch = next_epoch(session.epoch)
        return FetchContext("incremental", list(session.partitions.items()), session=session)

    def respond(self, context: FetchContext, node_id: int, version: int, answered: list,
                now_ms: int) -> tuple[int, list]:
        """The session id and the partition answers to send, from ``answered``: one entry per
        partition read, in order, its key first and its answer last. A full fetch makes a
        session if there is room."""
        if context.kind == "sessionless":
            return NO_SESSION, answered
        if context.kind == "full":
            if not self._room(now_ms, len(answered)):
                return NO_SESSION, answered
            given = dict(context.partitions)
            session = Session(self._new_id(), node_id, version >= TOPIC_IDS_SINCE, last_used_ms=now_ms)
            for key, *_, data in answered:
                cached = given[key]
                cached.high_watermark, cached.log_start_offset = data.high_watermark, data.log_start_offset
                session.partitions[key] = cached
            self.sessions[session.id] = session
            return session.id, answered
        session, sent = context.session, []
        for entry in answered:
            key, data = entry[0], entry[-1]
            cached = session.partitions.get(key)
            if cached is None or not _must_respond(cached, data):
                continue
            sent.append(entry)
            if data.records:
                session.partitions.move_to_end(key)
        return session.id, sent

    def _room(self, now_ms: int, size: int) -> bool:
        """FetchSessionCacheShard.tryEvict, for consumers' sessions: a stale one goes first, else
        the smallest, if it is no larger than the new one."""
        if len(self.sessions) < self.slots:
            return True
        if not self.sessions:
            return False
        stalest = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            del self.sessions[stalest.id]
            return True
        smallest = min(self.sessions.values(), key=lambda s: (len(s.partitions), s.id))
        if len(smallest.partitions) > size:
            return False
        del self.sessions[smallest.id]
        return True

    def _remove(self, node_id: int, session_id: int) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.node_id == node_id:
            del self.sessions[session_id]

    def _new_id(self) -> int:
        while (candidate := self._rng()) in self.sessions or candidate == NO_SESSION:
            pass
        return candidate


def key_of(version: int, topic, partition) -> tuple:
    """A partition's key in a session: by topic id from v13, else by name."""
    return (topic.topic_id if version >= TOPIC_IDS_SINCE else topic.topic, partition.partition)


def _must_respond(cached: Cached, data) -> bool:
    """CachedPartition.maybeUpdateResponseData: whether an incremental answer carries this
    partition (records, a new high watermark or log start offset, an error), remembering what
    it tells; after an error the next answer carries the partition again."""
    respond = bool(data.records) or data.error_code != ErrorCode.NONE
    if cached.high_watermark != data.high_watermark:
        cached.high_watermark, respond = data.high_watermark, True
    if cached.log_start_offset != data.log_start_offset:
        cached.log_start_offset, respond = data.log_start_offset, True
    if data.error_code != ErrorCode.NONE:
        cached.high_watermark = -1
    return respond
