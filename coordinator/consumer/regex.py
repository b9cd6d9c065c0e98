"""Subscription regexes as Kafka evaluates them: RE2 syntax (Kafka uses RE2/J), full matches
(see coordinator/re2j.py)."""

from __future__ import annotations

from protocol.errors import ErrorCode

from coordinator.errors import GroupError
from coordinator.re2j import InvalidRegex, compile_re2j, matching

__all__ = ["compile_subscription", "matching"]


def compile_subscription(regex: str):
    """The compiled pattern, or INVALID_REGULAR_EXPRESSION with Kafka's message."""
    try:
        return compile_re2j(regex)
    except InvalidRegex as e:
        raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.") from None
