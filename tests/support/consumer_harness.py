"""Helpers for KIP-848 consumer-group tests: the coordinator Harness plus ConsumerGroupHeartbeat.

    h = ConsumerHarness(topics={"foo": 6, "bar": 3})
    r = h.hb("m1", 0, topics=["foo"])          # a join: epoch 0, empty owned list, names
    r = h.hb("m1", r.member_epoch, owned=h.owned_by("m1"))

Topics get stable ids (``topic_id("foo")``) so expected assignments can be written by name
(``parts(foo=[0, 1])``). ``consumer_state(shard)`` is everything the consumer-group records
rebuild, in comparable form; ``replayed(h)`` is a fresh shard that replayed every record the
live one persisted (decoded from their log form) and was then ``loaded``.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from typing import Iterable, Mapping

from coordinator.metadata import MetadataImage, TopicImage
from coordinator.routing import shard_for
from offsets_log.records import GroupRecord, decode, encode_record
from protocol import REQUESTS
from protocol.api_keys import ApiKey

from tests.support.coordinator_harness import Harness

HB = ApiKey.CONSUMER_GROUP_HEARTBEAT
HeartbeatRequest = REQUESTS[HB].cls
TopicPartitions = HeartbeatRequest.TopicPartitions

#: record types (key versions) of the consumer-group records
GROUP_EPOCH, PARTITION_METADATA, MEMBER, TARGET_EPOCH, TARGET_MEMBER, CURRENT, REGEX = \
    3, 4, 5, 6, 7, 8, 16

_NS = uuid.UUID("6f1b0c2e-9f1a-4f5e-8d7c-0a4b5c6d7e8f")
_UNSET = object()


def topic_id(name: str) -> uuid.UUID:
    """A stable id per topic name (tests write assignments by name)."""
    return uuid.uuid5(_NS, name)


def image(version: int = 1, ids: Mapping[str, uuid.UUID] | None = None,
          **partitions: int) -> MetadataImage:
    """A metadata image of topics ``name=partition count`` (``ids`` overrides a topic's id, as
    a deleted and re-created topic gets a new one)."""
    ids = ids or {}
    return MetadataImage({n: TopicImage(n, ids.get(n) or topic_id(n), c)
                          for n, c in partitions.items()}, version)


def parts(**by_name: Iterable[int]) -> dict[uuid.UUID, frozenset[int]]:
    """An assignment written by topic name: ``parts(foo=[0, 1])`` (empty lists dropped)."""
    return {topic_id(n): frozenset(ps) for n, ps in by_name.items() if ps}


def owned(assignment: Mapping[uuid.UUID, Iterable[int]] | None) -> tuple | None:
    """A heartbeat's TopicPartitions from an assignment (None stays None: "not sent")."""
    if assignment is None:
        return None
    return tuple(TopicPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                 for t, ps in sorted(assignment.items(), key=lambda kv: str(kv[0])) if ps)


def owned_names(**by_name: Iterable[int]) -> tuple:
    """TopicPartitions by topic name, sent as written (even an empty partition list)."""
    return tuple(TopicPartitions(topic_id=topic_id(n), partitions=tuple(ps)) for n, ps in by_name.items())


def response_assignment(response) -> dict[uuid.UUID, frozenset[int]] | None:
    """A heartbeat response's assignment (None when it carries none)."""
    if response.assignment is None:
        return None
    return {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions
            if tp.partitions}


def group_on_shard(shard_id: int, prefix: str = "grp", *, same: bool = True, shards: int = 50) -> str:
    """A group id that lives on shard ``shard_id`` (or, ``same=False``, on another one)."""
    for i in range(100_000):
        gid = f"{prefix}-{i}"
        if (shard_for(gid, shards) == shard_id) == same:
            return gid
    raise AssertionError("no such group id")


class ConsumerHarness(Harness):
    """The coordinator Harness with a topic image and ConsumerGroupHeartbeat helpers."""

    def __init__(self, config=None, *, group: str = "g", now: int = 0,
                 topics: Mapping[str, int] | None = None):
        super().__init__(config, group=group, now=now)
        self.image_version = 0
        if topics:
            self.set_topics(**topics)

    def set_topics(self, ids: Mapping[str, uuid.UUID] | None = None, **partitions: int) -> MetadataImage:
        """Hand the shard a new metadata image (the version grows with every call)."""
        self.image_version += 1
        img = image(self.image_version, ids, **partitions)
        self.shard.on_metadata(img)
        return img

    def request(self, member_id: str = "", epoch: int = 0, *, group: str | None = None,
                instance: str | None = None, rack: str | None = None, rebalance=_UNSET,
                topics=_UNSET, regex: str | None = None, assignor: str | None = None,
                owned=_UNSET):
        """A ConsumerGroupHeartbeat request. A join (epoch 0) defaults to a full request
        (rebalance timeout 300 s, no topics, an empty owned list); any other epoch to the
        lightest one (no rebalance timeout, no subscription, no owned partitions)."""
        joining = epoch == 0
        if rebalance is _UNSET:
            rebalance = 300_000 if joining else -1
        if topics is _UNSET:
            topics = () if joining and regex is None else None
        if owned is _UNSET:
            owned = () if joining else None
        return HeartbeatRequest(
            group_id=self.group if group is None else group, member_id=member_id,
            member_epoch=epoch, instance_id=instance, rack_id=rack, rebalance_timeout_ms=rebalance,
            subscribed_topic_names=None if topics is None else tuple(topics),
            subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=owned)

    def send_hb(self, request, *, version: int = 1, client_id: str = "client"):
        """Send a ConsumerGroupHeartbeat request; returns its response."""
        token = self.send(HB, version, request, client_id=client_id)
        return self.replies[token]

    def hb(self, member_id: str = "", epoch: int = 0, *, version: int = 1,
           client_id: str = "client", **fields):
        """Build and send a heartbeat (see :meth:`request`); returns the response."""
        return self.send_hb(self.request(member_id, epoch, **fields), version=version,
                            client_id=client_id)

    # --- reading ---------------------------------------------------------------------------
    def cgroup(self, group: str | None = None):
        return self.shard.consumer.groups[self.group if group is None else group]

    def member(self, member_id: str, group: str | None = None):
        return self.cgroup(group).members[member_id]

    def owned_by(self, member_id: str, group: str | None = None) -> tuple:
        """What the member holds by the coordinator's account (assigned and revoking)."""
        m = self.member(member_id, group)
        held: dict[uuid.UUID, set[int]] = {}
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                held.setdefault(t, set()).update(ps)
        return owned(held)

    def records(self, start: int = 0) -> list:
        """The persisted records from index ``start`` on, decoded."""
        return [decode(r) for r in self.persisted[start:]]

    def seed(self, records: Iterable) -> None:
        """Replay typed records into the shard as if loaded (and keep them in ``persisted``)."""
        for record in records:
            self.persisted.append(encode_record(record))
            self.shard.replay(record)


def record_kinds(records) -> list[tuple]:
    """(type, sub, tombstone?) of decoded consumer-group records, others as their class name."""
    return [(r.type, r.sub, r.value is None) if isinstance(r, GroupRecord)
            else type(r).__name__ for r in records]


# --- state, for replay equivalence -----------------------------------------------------------

def _plain(value):
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def member_view(member) -> dict:
    """Every field of a member, mappings as plain dicts."""
    return {f.name: _plain(getattr(member, f.name)) for f in dataclasses.fields(member)}


def group_view(group) -> dict:
    """What a consumer group's records rebuild (not the transient metadata-refresh deadline)."""
    return {
        "state": group.state,
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignment_timestamp": group.assignment_timestamp,
        "members": {m: member_view(v) for m, v in group.members.items()},
        "described_order": [m.member_id for m in group.members_in_kafka_order()],
        "static_members": dict(group.static_members),
        "target": {m: _plain(a) for m, a in group.target.items()},
        "partition_epochs": dict(group.partition_epochs),
        "subscription_metadata": dict(group.subscription_metadata),
        "resolved": dict(group.resolved),
        "subscribed_names": +Counter(group.subscribed_names),
        "regex_members": +Counter(group.regex_members),
        "server_assignors": +Counter(group.server_assignors),
    }


def consumer_state(shard) -> dict:
    return {gid: group_view(g) for gid, g in shard.consumer.groups.items()}


def replayed(h: Harness, now: int | None = None):
    """A fresh shard that replayed every record ``h`` persisted, decoded, then loaded."""
    fresh = h.shard.fresh()
    for record in h.persisted:
        fresh.replay(decode(record))
    fresh.loaded(h.now if now is None else now)
    return fresh


def delete_groups(h: Harness, *groups: str) -> dict[str, int]:
    """DeleteGroups v2: {group id: error code}."""
    api = ApiKey.DELETE_GROUPS
    response = h.replies[h.send(api, 2, REQUESTS[api].cls(groups_names=groups))]
    return {r.group_id: r.error_code for r in response.results}
