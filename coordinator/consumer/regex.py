"""Subscription regexes as Kafka evaluates them: RE2 syntax (Kafka uses RE2/J), full matches.

Errors are reported with RE2/J's descriptions (those of Go's regexp/syntax, which RE2/J
ports): the C++ RE2 engine words them differently.
"""

from __future__ import annotations

import re2

from protocol.errors import ErrorCode

from coordinator.errors import GroupError

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False          # the engine would print every bad pattern to stderr

#: C++ RE2's error text -> RE2/J's description of the same error
_DESCRIPTIONS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "no argument for repetition operator": "missing argument to repetition operator",
    "trailing \\": "trailing backslash at end of expression",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "invalid named capture group": "invalid named capture",
    "duplicate capture group name": "duplicate capture group name",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}


def compile_subscription(regex: str):
    """The compiled pattern, or INVALID_REGULAR_EXPRESSION with Kafka's message."""
    try:
        return re2.compile(regex, options=_OPTIONS)
    except re2.error as e:
        text = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) \
            else str(e)
        code = text.split(": ", 1)[0]
        raise GroupError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                         f"{_DESCRIPTIONS.get(code, code)}.") from None


def matching(pattern, names) -> frozenset[str]:
    """The names the whole pattern matches (Kafka's ``matcher(name).matches()``)."""
    return frozenset(n for n in names if pattern.fullmatch(n))
