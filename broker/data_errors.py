"""Kafka's answer when a whole data-plane request fails (its ``getErrorResponse``).

Every topic the request names gets the error; nothing else is reported. Produce, Fetch,
ListOffsets and InitProducerId share the builders fault injection uses.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.wire import ZERO_UUID

from .faults import error_answer

Metadata, CreateTopics, DeleteTopics = RESPONSES[3].cls, RESPONSES[19].cls, RESPONSES[20].cls


def whole_request_error(key: int, version: int, body, error: ErrorCode, message: str | None = None):
    """The answer to data-plane request ``body`` (API ``key`` at ``version``) that failed with ``error``."""
    if key == 3:
        topic = Metadata.MetadataResponseTopic
        # the answer's names are not nullable: a topic asked for by id comes back named ""
        return Metadata(error_code=error, topics=tuple(
            topic(error_code=error, name=t.name or "", topic_id=t.topic_id) for t in body.topics or ()))
    if key == 19:
        result = CreateTopics.CreatableTopicResult
        return CreateTopics(topics=tuple(result(name=t.name, error_code=error, error_message=message)
                                         for t in body.topics))
    if key == 20:
        result = DeleteTopics.DeletableTopicResult
        wanted = [(t.name, t.topic_id) for t in body.topics] if version >= 6 else \
            [(name, ZERO_UUID) for name in body.topic_names]
        return DeleteTopics(responses=tuple(result(name=name, topic_id=topic_id, error_code=error,
                                                   error_message=message) for name, topic_id in wanted))
    return error_answer(key, version, body, error)
