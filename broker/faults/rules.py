"""Request faults injected on purpose, and the record of what the broker was asked.

A :class:`FaultRule` matches requests of one API (optionally of one group or client id) and
answers the next ``count`` of them with an error code, delays them, or drops the connection
instead of answering. Rules are checked in the order they were added; a rule that has fired
``count`` times is gone. An error is answered as Kafka answers a request that fails as a whole
(``AbstractRequest.getErrorResponse``, declared with each API), so clients take their real
error paths.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Callable

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe
from protocol.registry import API_TABLE
from protocol.uuids import kafka_uuid


log = logging.getLogger("groupbroker.faults")

#: How many requests a recording keeps (the oldest go first).
RECORD_LIMIT = 100_000


class FaultError(ValueError):
    """A fault that cannot be set up as asked (the message says why)."""


class ConnectionDropped(Exception):
    """A fault rule dropped the connection instead of answering."""


def api_key(api: int | str) -> int:
    """An API by key or by Kafka's name (``Heartbeat``, ``OffsetCommit``, ...)."""
    if isinstance(api, int) or str(api).isdigit():
        key = int(api)
        if key in API_TABLE:
            return key
    else:
        for spec in API_TABLE.values():
            if spec.name.lower() == str(api).lower():
                return spec.key
    raise FaultError(f"unknown API {api!r}; known: {', '.join(s.name for s in API_TABLE.values())}")


def error_code(error: int | str) -> ErrorCode:
    """An error by code or by Kafka's name (``REBALANCE_IN_PROGRESS``)."""
    try:
        return ErrorCode(int(error)) if str(error).lstrip("-").isdigit() else ErrorCode[str(error).upper()]
    except (KeyError, ValueError):
        raise FaultError(f"unknown error code {error!r}") from None


@dataclass
class FaultRule:
    """What to do to the next ``count`` matching requests (``count`` None: until cleared)."""
    id: int
    api_key: int
    error: ErrorCode | None = None
    delay_ms: int = 0
    drop: bool = False
    count: int | None = 1
    group: str | None = None
    client_id: str | None = None

    def matches(self, ctx, body) -> bool:
        return (ctx.api_key == self.api_key
                and (self.client_id is None or ctx.client_id == self.client_id)
                and (self.group is None or self.group in groups_of(ctx.api_key, body)))

    def describe(self) -> str:
        what = (f"answer {self.error.name}" if self.error is not None else
                "drop the connection" if self.drop else f"delay {self.delay_ms} ms")
        scope = "".join(f" {k}={v}" for k, v in (("group", self.group), ("client_id", self.client_id)) if v)
        times = "every time" if self.count is None else f"next {self.count}"
        return f"rule {self.id}: {API_TABLE[self.api_key].name}{scope}: {what} ({times})"


@dataclass
class AuthenticationFault:
    """Fail the next ``count`` authentications (None: until cleared) of a principal or client
    id, as if the credentials were wrong."""
    id: int
    principal: str | None = None
    client_id: str | None = None
    count: int | None = 1

    def matches(self, principal: str, client_id: str) -> bool:
        return ((self.principal is None or principal == self.principal)
                and (self.client_id is None or client_id == self.client_id))

    def describe(self) -> str:
        scope = "".join(f" {k}={v}" for k, v in (("principal", self.principal), ("client_id", self.client_id)) if v)
        times = "every time" if self.count is None else f"next {self.count}"
        return f"rule {self.id}: fail authentication{scope or ' of anyone'} ({times})"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the broker received and answered it.

    ``generation`` is the generation id a classic request carries (an OffsetCommit's
    ``generation_id_or_member_epoch``, which is a member epoch from a consumer-protocol
    member); a ConsumerGroupHeartbeat or ShareGroupHeartbeat has ``member_epoch``, the epoch it
    sent (0 joins, -1 and -2 leave), and ``answered_member_epoch``, the epoch its answer gave
    (Kafka answers an error with 0)."""
    api: str
    api_key: int
    version: int
    client_id: str
    group: str | None
    member: str | None
    generation: int | None
    error: str                          # the first error code in the answer, "NONE" if none
    member_epoch: int | None = None
    answered_member_epoch: int | None = None
    transactional_id: str | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    node: int | None = None              # the node that answered (in a cluster, each has its share)
    principal: str | None = None         # who sent it (User:ANONYMOUS unless authenticated)
    listener: str | None = None          # the listener it came on
    #: ShareFetch and ShareAcknowledge: the session epoch sent, the records the answer acquired
    #: (topic, partition, first offset, last offset, delivery count) and the acknowledgements
    #: sent (topic, partition, first offset, last offset, "ACCEPT" or the types per offset)
    share_session_epoch: int | None = None
    acquired: tuple = ()
    acknowledged: tuple = ()

    @classmethod
    def of(cls, fields: dict) -> RecordedRequest:
        """One from its fields as the admin endpoint sends them (JSON: lists for tuples)."""
        ranges = {name: tuple(tuple(r) for r in fields.get(name, ())) for name in ("acquired", "acknowledged")}
        return cls(**{**fields, **ranges})


class Faults:
    """The broker's fault rules and its request recording; ``injectable``: the APIs whose
    requests may be answered with an error code (those declared so)."""

    def __init__(self, injectable: frozenset[int]):
        self.injectable = injectable
        self.rules: list[FaultRule] = []
        self.authentication: list[AuthenticationFault] = []
        self.recording = False
        self.recorded: deque[RecordedRequest] = deque(maxlen=RECORD_LIMIT)
        self._ids = itertools.count(1)
        self.topic_name: Callable[[uuid.UUID], str | None] = lambda topic_id: None

    def name_topics(self, topic_name: Callable[[uuid.UUID], str | None]) -> None:
        """How recorded share requests name a topic id (the broker's metadata, once it runs)."""
        self.topic_name = topic_name

    def add(self, api: int | str, *, error: int | str | None = None, delay_ms: int = 0, drop: bool = False,
            count: int | None = 1, group: str | None = None, client_id: str | None = None) -> FaultRule:
        key = api_key(api)
        if sum((error is not None, delay_ms > 0, drop)) != 1:
            raise FaultError("a fault does exactly one of: answer an error, delay (ms > 0), drop")
        if count is not None and count < 1:
            raise FaultError("count must be at least 1 (or None: until cleared)")
        code = None if error is None else error_code(error)
        if code is not None and key not in self.injectable:
            raise FaultError(f"{API_TABLE[key].name} cannot be answered with an injected error; "
                             "delay or drop it instead")
        rule = FaultRule(next(self._ids), key, code, delay_ms, drop, count, group, client_id)
        self.rules.append(rule)
        log.warning("fault injection: added %s", rule.describe())
        return rule

    def fail_authentication(self, principal: str | None, client_id: str | None,
                            count: int | None = 1) -> AuthenticationFault:
        if count is not None and count < 1:
            raise FaultError("count must be at least 1 (or None: until cleared)")
        if principal is not None and ":" not in principal:
            raise FaultError(f"a principal is TYPE:NAME, e.g. User:{principal}")
        rule = AuthenticationFault(next(self._ids), principal, client_id, count)
        self.authentication.append(rule)
        log.warning("fault injection: added %s", rule.describe())
        return rule

    def take_authentication(self, principal: str, client_id: str) -> AuthenticationFault | None:
        """The first authentication fault matching, counted as fired."""
        for rule in self.authentication:
            if rule.matches(principal, client_id):
                if rule.count is not None:
                    rule.count -= 1
                    if rule.count == 0:
                        self.authentication.remove(rule)
                log.warning("fault injection: authentication of %s (client %s): %s", safe(principal),
                            safe(client_id), rule.describe())
                return rule
        return None

    def clear(self) -> int:
        cleared = len(self.rules) + len(self.authentication)
        self.rules.clear()
        self.authentication.clear()
        if cleared:
            log.warning("fault injection: cleared %d rule(s)", cleared)
        return cleared

    def take(self, ctx, body) -> FaultRule | None:
        """The first rule matching this request, counted as fired."""
        for rule in self.rules:
            if rule.matches(ctx, body):
                if rule.count is not None:
                    rule.count -= 1
                    if rule.count == 0:
                        self.rules.remove(rule)
                log.warning("fault injection: %s v%d from client %s: %s", API_TABLE[ctx.api_key].name,
                            ctx.version, safe(ctx.client_id), safe(rule.describe()))
                return rule
        return None

    def record(self, ctx, body, response) -> None:
        groups = groups_of(ctx.api_key, body)
        generation = getattr(body, "generation_id", getattr(body, "generation_id_or_member_epoch", None))
        member_epoch = answered = None
        if ctx.api_key in (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_HEARTBEAT,
                           ApiKey.STREAMS_GROUP_HEARTBEAT):
            member_epoch = body.member_epoch
            answered = getattr(response, "member_epoch", None)
        share = {}
        if ctx.api_key in (ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE):
            share = {"share_session_epoch": body.share_session_epoch, "acquired": self._acquired(response),
                     "acknowledged": self._acknowledged(body)}
        # the producer a transactional request names (InitProducerId: the one its answer gave)
        producer = response if ctx.api_key == ApiKey.INIT_PRODUCER_ID and response is not None else body
        self.recorded.append(RecordedRequest(
            API_TABLE[ctx.api_key].name, ctx.api_key, ctx.version, ctx.client_id,
            next(iter(groups), None) if len(groups) == 1 else None,
            getattr(body, "member_id", None), generation, first_error(response).name,
            member_epoch, answered, _either(body, "transactional_id"),
            _either(producer, "producer_id"), _either(producer, "producer_epoch"), ctx.node_id,
            ctx.principal, ctx.listener, **share))

    def _topic(self, topic_id: uuid.UUID) -> str:
        return self.topic_name(topic_id) or kafka_uuid(topic_id)

    def _acquired(self, response) -> tuple:
        return tuple((self._topic(t.topic_id), p.partition_index, a.first_offset, a.last_offset, a.delivery_count)
                     for t in getattr(response, "responses", ()) for p in t.partitions
                     for a in getattr(p, "acquired_records", ()))

    def _acknowledged(self, body) -> tuple:
        return tuple((self._topic(t.topic_id), p.partition_index, b.first_offset, b.last_offset,
                      ",".join(_ACK_TYPES.get(k, str(k)) for k in b.acknowledge_types))
                     for t in body.topics for p in t.partitions for b in p.acknowledgement_batches)


#: ShareFetch's and ShareAcknowledge's acknowledge types
_ACK_TYPES = {0: "GAP", 1: "ACCEPT", 2: "RELEASE", 3: "REJECT", 4: "RENEW"}


def _either(obj, name: str):
    """A field that AddPartitionsToTxn v0-3 names with a ``v3_and_below_`` prefix."""
    return getattr(obj, name, getattr(obj, f"v3_and_below_{name}", None))


def groups_of(key: int, body) -> tuple[str, ...]:
    """The consumer groups a request names."""
    if key == ApiKey.FIND_COORDINATOR:
        if getattr(body, "key_type", 0) != 0:
            return ()
        return tuple(body.coordinator_keys) or (body.key,)
    if hasattr(body, "group_id"):
        return (body.group_id,)
    if key == ApiKey.DELETE_GROUPS:
        return tuple(body.groups_names)
    if key == ApiKey.CONSUMER_GROUP_DESCRIBE:
        return tuple(body.group_ids)
    if key in (ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS):
        return tuple(g if isinstance(g, str) else g.group_id for g in body.groups)
    return ()


def first_error(response) -> ErrorCode:
    """The answer's top-level error, else the first error of its items (topics, partitions...)."""
    if response is None:
        return ErrorCode.NONE
    code = getattr(response, "error_code", 0)
    if code:
        return ErrorCode(code)
    for f in dataclasses.fields(response):
        value = getattr(response, f.name)
        if isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            for item in value:
                code = first_error(item)
                if code:
                    return code
    return ErrorCode.NONE
