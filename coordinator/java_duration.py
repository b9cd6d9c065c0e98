"""``java.time.Duration.parse``: ISO-8601 ``PnDTnHnMn.nS`` (a sign before the whole and before
each number allowed, letters in either case), as Kafka reads durations in settings and tools."""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?"
                       r"(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?", re.IGNORECASE)


def parse_duration(text: str) -> timedelta:
    """The duration ``text`` names; ValueError with Java's message if it names none."""
    match = _DURATION.fullmatch(text)
    if not match or match.group(3) == "T" or not any(match.group(i) for i in (2, 4, 5, 6)):
        raise ValueError("Text cannot be parsed to a Duration")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    nanos = int((fraction or "0").ljust(9, "0")) * (-1 if (seconds or "").startswith("-") else 1)
    total = timedelta(days=int(days or 0), hours=int(hours or 0), minutes=int(minutes or 0),
                      seconds=int(seconds or 0), microseconds=nanos / 1000)
    return -total if sign == "-" else total
