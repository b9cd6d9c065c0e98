"""What a shard asks its driver to do, in order: make records durable, answer requests,
note events in the journal, create a share group's share state.

A shard never performs I/O. Every call returns a list of these; the driver (the broker's shard
task, or a test) executes them in order, so a :class:`Reply` that follows a :class:`Persist`
is sent only once those records are durable — which is how "acknowledged means on disk" holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from offsets_log.records import Record


@dataclass(slots=True)
class Reply:
    token: Any            # opaque: whatever the driver passed in to route the answer
    api_key: int
    version: int
    response: Any         # a protocol.messages response dataclass


@dataclass(frozen=True, slots=True)
class Persist:
    records: tuple[Record, ...]


class Journal(NamedTuple):
    """A group event for the analytics journal (see coordinator/events.py): never replayed,
    never delays a reply; a driver without a journal drops it. A named tuple: one is made per
    OffsetCommit, and a frozen dataclass costs several times more to build."""
    event: str
    time: int                 # ms, the ``now`` the shard was given
    shard: int
    group: str
    generation: int
    member: str | None
    details: dict


@dataclass(frozen=True, slots=True)
class ShareStateInit:
    """New share state for these partitions of a share group (Kafka's InitializeShareGroupState
    to its share coordinator): topic id -> partitions; each starts from the group's
    share.auto.offset.reset, whatever state it had before."""
    group: str
    partitions: dict


@dataclass(frozen=True, slots=True)
class CreateTopics:
    """Internal topics a streams group's topology needs, which the broker creates once the
    heartbeat of ``token`` is answered (Kafka's createStreamsInternalTopics): name ->
    (partitions, replication factor or -1, configs); a failure is reported in the status of the
    group's heartbeats for ``error_ttl_ms``."""
    token: Any
    topics: dict
    error_ttl_ms: int


Action = Reply | Persist | Journal | ShareStateInit | CreateTopics


@dataclass(slots=True)
class RequestContext:
    """Who asked: the routing token, the API and version, and the client's identity."""
    token: Any
    api_key: int
    version: int
    client_id: str = ""
    client_host: str = "/127.0.0.1"
