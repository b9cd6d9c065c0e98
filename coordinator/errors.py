"""The coordinator's typed failure: a Kafka error code and Kafka's message for it."""

from __future__ import annotations

from protocol.errors import ErrorCode


class GroupError(Exception):
    """A request the coordinator refuses (Kafka's ApiException): answered with ``code`` and
    ``message``, changing nothing."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message or code.name)
        self.code, self.message = code, message
