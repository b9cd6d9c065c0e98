"""The two time arguments of ``--reset-offsets``, read as Kafka's tool reads them.

``--to-datetime``: Kafka's Utils.getDateTime, ``yyyy-MM-ddTHH:mm:ss.SSS`` strictly, then a zone
(``Z``, ``+HH``, ``+HHMM`` or ``+HH:MM``); with no zone the time is UTC.
``--by-duration``: java.time.Duration.parse, ISO-8601 ``PnDTnHnMn.nS`` (signs allowed).
A bad one raises :class:`TimeArgumentError` with the text of the Java exception Kafka reports.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from coordinator import java_duration
from kafka_client.admin import GroupsError


class TimeArgumentError(GroupsError):
    """An unreadable --to-datetime or --by-duration; str() is what Kafka's tool prints."""


_DATETIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{1,3})"
                       r"(Z|[+-]\d{2}(?::?\d{2})?)")


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of ``text``."""
    parts = text.split("T")
    if len(parts) < 2:
        raise TimeArgumentError("java.text.ParseException: Error parsing timestamp. It does not "
                                "contain a 'T' according to ISO8601 format")
    if not any(c in parts[1] for c in "+-Z"):
        text += "Z"
    match = _DATETIME.fullmatch(text)
    try:
        if not match:
            raise ValueError(text)
        year, month, day, hour, minute, second, millis, zone = match.groups()
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                          tzinfo=_zone(zone))
    except ValueError:
        raise TimeArgumentError(f'java.text.ParseException: Unparseable date: "{text}"') from None
    return int(moment.timestamp()) * 1000 + int(millis)


def _zone(text: str) -> timezone:
    if text == "Z":
        return timezone.utc
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(text)
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(-offset if text[0] == "-" else offset)


def parse_duration(text: str) -> timedelta:
    """The duration ``text`` names."""
    try:
        return java_duration.parse_duration(text)
    except ValueError as e:
        raise TimeArgumentError(str(e)) from None
