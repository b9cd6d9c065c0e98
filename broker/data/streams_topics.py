"""The internal topics a streams group's coordinator asks for, created as Kafka's broker
creates them after its coordinator answered a StreamsGroupHeartbeat (KafkaApis and
AutoTopicCreationManager.createStreamsInternalTopics).

Where ACLs are enforced the heartbeat's principal needs CREATE on the cluster or on each topic,
else none is created and the heartbeat's MISSING_INTERNAL_TOPICS status says which were refused.
Allowed topics are created in the background, one CreateTopics request, while the heartbeat is
answered; a topic already being created is left to that creation, and one whose creation failed
is not tried again for twice the group's heartbeat interval, while the status names its error.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Awaitable, Callable

import trio

from protocol.api_keys import ApiKey
from protocol.error_messages import default_message
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS, RESPONSES

from broker.data.errors import Refused

log = logging.getLogger("groupbroker.data")

MISSING_INTERNAL_TOPICS = 3
#: Kafka's ExpiringErrorCache holds this many errors; the one expiring soonest goes first
ERROR_CACHE_SIZE = 1000
Status = RESPONSES[ApiKey.STREAMS_GROUP_HEARTBEAT].cls.Status


class StreamsTopics:
    """``create``: a CreateTopics request's handler (the data plane's); ``denied``: (ctx,
    names) -> the names the client may not create, when ACLs are enforced (set by the broker)."""

    def __init__(self, create: Callable[[object, object], Awaitable[object]], clock=time.monotonic):
        self.create, self.clock = create, clock
        self.denied: Callable[[object, list[str]], list[str]] | None = None
        self.nursery: trio.Nursery | None = None          # where creations run (set by the broker)
        self._creating: set[str] = set()
        self._errors: dict[str, tuple[float, str]] = {}  # topic -> (expiry, message)

    def asked(self, ctx, response, topics: dict, error_ttl_ms: int):
        """The heartbeat's answer once the topics it asked for are dealt with: name ->
        (partitions, replication factor or -1, configs)."""
        names = list(topics)
        denied = self.denied(ctx, names) if self.denied is not None else []
        if denied:
            return _with_status(response, f"Unauthorized to CREATE on topics {', '.join(denied)}.")
        now = self.clock()
        self._errors = {t: e for t, e in self._errors.items() if e[0] > now}
        wanted = {n: t for n, t in topics.items() if n not in self._creating and n not in self._errors}
        if wanted and self.nursery is not None:
            self._creating |= wanted.keys()
            self.nursery.start_soon(self._create, wanted, error_ttl_ms / 1000)
        failed = [f"{n} ({self._errors[n][1]})" for n in names if n in self._errors]
        if failed and any(s.status_code == MISSING_INTERNAL_TOPICS for s in response.status or ()):
            more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
            return _with_status(response, f"Creation failed: {', '.join(failed[:3])}{more}.")
        return response

    async def _create(self, topics: dict, ttl_s: float) -> None:
        cls = REQUESTS[ApiKey.CREATE_TOPICS].cls
        topic_cls = cls.CreatableTopic
        request = cls(timeout_ms=30_000, topics=tuple(topic_cls(
            name=name, num_partitions=partitions, replication_factor=replicas, assignments=(),
            configs=tuple(topic_cls.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()))
            for name, (partitions, replicas, configs) in topics.items()))
        try:
            answer = await self.create(None, request)
            errors = {t.name: t.error_message or default_message(ErrorCode(t.error_code))
                      for t in answer.topics if t.error_code}
        except Refused as e:            # a refused request fails every topic in it, as in Kafka
            errors = {name: e.message or default_message(e.error_code) for name in topics}
        finally:
            self._creating -= topics.keys()
        for name, message in errors.items():
            log.info("a streams group's internal topic %s was not created: %s", name, message)
            self._errors[name] = (self.clock() + ttl_s, message)
        while len(self._errors) > ERROR_CACHE_SIZE:
            del self._errors[min(self._errors, key=lambda t: self._errors[t][0])]


def _with_status(response, detail: str):
    """The MISSING_INTERNAL_TOPICS status with ``detail`` added, or a new one with it."""
    statuses = list(response.status or ())
    for i, s in enumerate(statuses):
        if s.status_code == MISSING_INTERNAL_TOPICS:
            statuses[i] = dataclasses.replace(s, status_detail=f"{s.status_detail}; {detail}")
            break
    else:
        statuses.append(Status(status_code=MISSING_INTERNAL_TOPICS, status_detail=detail))
    return dataclasses.replace(response, status=tuple(statuses))
