"""Regular expressions as Kafka evaluates them with RE2/J: RE2 syntax, whole-string matches.

Kafka compiles consumer group subscriptions (KIP-848) and ListTransactions' transactional id
pattern (KIP-1152) with RE2/J, so no backreferences and no lookaround. Errors are described
with RE2/J's words (those of Go's regexp/syntax, which RE2/J ports): the C++ RE2 engine words
them differently.
"""

from __future__ import annotations

import re2

OPTIONS = re2.Options()
OPTIONS.log_errors = False          # the engine would print every bad pattern to stderr

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


class InvalidRegex(ValueError):
    """A pattern RE2/J would not compile; the text is RE2/J's description of why."""


def compile_re2j(regex: str):
    """The compiled pattern, or :class:`InvalidRegex`."""
    try:
        return re2.compile(regex, options=OPTIONS)
    except re2.error as e:
        text = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) \
            else str(e)
        code = text.split(": ", 1)[0]
        raise InvalidRegex(_DESCRIPTIONS.get(code, code)) from None


def matching(pattern, names) -> frozenset[str]:
    """The names the whole pattern matches (Kafka's ``matcher(name).matches()``)."""
    return frozenset(n for n in names if pattern.fullmatch(n))
