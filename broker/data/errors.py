"""The refusal the data plane's and the transaction coordinator's handlers raise, and the
wrapper that turns it (or a bug) into the API's whole-request error answer (declared with the
API, built in ``protocol/error_answers.py``)."""

from __future__ import annotations

import functools
import logging

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.logtext import safe
from protocol.registry import API_TABLE

from topic_log.errors import TopicsError

log = logging.getLogger("groupbroker.data")

#: Kafka's QuorumController.MAX_RECORDS_PER_USER_OP and the PolicyViolationException message
#: its controller answers when one request would write more metadata records than that.
MAX_RECORDS_PER_USER_OP = 10_000
#: ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: the partitions one CreateTopics may make
MAX_PARTITIONS_PER_BATCH = 10_000
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."
#: The longest error message an answer carries: messages quote client strings (topic names),
#: and a non-flexible version cannot carry a string over 32,767 bytes.
MESSAGE_LIMIT = 1000


class Refused(Exception):
    """A request the data plane turns down with a specific Kafka error."""

    def __init__(self, error_code: ErrorCode, message: str = ""):
        super().__init__(message)
        self.error_code = error_code


def error_message(e: Exception) -> str | None:
    """``e``'s text for an answer's error_message, cut to :data:`MESSAGE_LIMIT` characters."""
    return cut(str(e)) or None


def cut(text: str) -> str:
    """``text`` cut to :data:`MESSAGE_LIMIT` characters (messages quote client strings)."""
    return text[:MESSAGE_LIMIT] + "..." if len(text) > MESSAGE_LIMIT else text


def each_partition(topics, partitions_of, answer, refused) -> list[tuple[object, tuple]]:
    """``[(topic, its partitions' answers)]``: ``answer(topic, partition)`` for each of
    ``partitions_of(topic)``, or ``refused(topic, partition, error)`` where that raised the
    partition's own error (a TopicsError: unknown, not led here, fenced, a failing disk)."""
    answered = []
    for topic in topics:
        parts = []
        for partition in partitions_of(topic):
            try:
                parts.append(answer(topic, partition))
            except TopicsError as e:
                parts.append(refused(topic, partition, e))
        answered.append((topic, tuple(parts)))
    return answered


def answering_errors(handler, failed):
    """``handler`` answering with Kafka's whole-request error (``failed``, its API's) instead
    of raising: a refused request, a storage failure, or (as Kafka's UNKNOWN_SERVER_ERROR) a
    bug of ours."""
    @functools.wraps(handler)
    async def decide(ctx, req):
        try:
            return await handler(ctx, req)
        except (Refused, TopicsError) as e:
            log.warning("%s v%d from client %s: %s (%s)", API_TABLE[ctx.api_key].name, ctx.version,
                        safe(ctx.client_id), e.error_code.name, safe(str(e)))
            error, message = e.error_code, error_message(e)
        except Exception:        # a bug must cost its request an error answer, never the connection
            log.exception("%s v%d from client %s failed; answering UNKNOWN_SERVER_ERROR",
                          API_TABLE[ctx.api_key].name, ctx.version, safe(ctx.client_id))
            error, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
        if ctx.api_key == ApiKey.PRODUCE and req.acks == 0:
            return None                  # a produce with acks=0 is never answered
        return failed(ctx.version, req, error, message)
    return decide
