"""How the output looks: Kafka's tool byte for byte, or groupbroker's older compact layout.

Kafka's ConsumerGroupCommand prints each table with Java's ``%-Ns`` columns joined by one space,
starting it with a blank line (its formats begin with a newline) and padding every column but
the last; errors go to stdout as a blank line then ``Error: ...``. The older layout (the
subcommand syntax) prints the same columns with no blank lines, no trailing spaces, and its
errors on stderr.
"""

from __future__ import annotations

import sys

from protocol.errors import ErrorCode

# Kafka's exception class and default message for the error codes these commands can meet
# (org.apache.kafka.common.protocol.Errors).
_EXCEPTIONS = {
    ErrorCode.NON_EMPTY_GROUP: ("GroupNotEmptyException", "The group is not empty."),
    ErrorCode.GROUP_ID_NOT_FOUND: ("GroupIdNotFoundException", "The group id does not exist."),
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: (
        "GroupSubscribedToTopicException",
        "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ("UnknownTopicOrPartitionException",
                                           "This server does not host this topic-partition."),
    ErrorCode.INVALID_GROUP_ID: ("InvalidGroupIdException", "The configured groupId is invalid."),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: ("GroupAuthorizationException", "Group authorization failed."),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: ("TopicAuthorizationException", "Topic authorization failed."),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ("CoordinatorNotAvailableException",
                                          "The coordinator is not available."),
    ErrorCode.NOT_COORDINATOR: ("NotCoordinatorException", "This is not the correct coordinator."),
    ErrorCode.INVALID_REQUEST: (
        "InvalidRequestException",
        "This most likely occurs because of a request being malformed by the client library or the message was "
        "sent to an incompatible broker. See the broker logs for more details."),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ("CoordinatorLoadInProgressException",
                                             "The coordinator is loading and hence can't process requests."),
}


def error_message(code: ErrorCode) -> str:
    """Kafka's Errors.message() for ``code``."""
    return _EXCEPTIONS.get(code, ("", code.name))[1]


def exception_text(code: ErrorCode, message: str | None = None) -> str:
    """How Java prints the exception Kafka's client raises for ``code`` (Throwable.toString)."""
    name, default = _EXCEPTIONS.get(code, ("UnknownServerException", code.name))
    return f"org.apache.kafka.common.errors.{name}: {message or default}"


def dash(value) -> str:
    """Kafka's MISSING_COLUMN_VALUE for an absent value."""
    return "-" if value is None else str(value)


class Output:
    """Where and how lines go, for one run in one of the two layouts."""

    def __init__(self, legacy: bool):
        self.legacy = legacy

    def lines(self, lines: list[str]) -> None:
        sys.stdout.write("".join(line + "\n" for line in lines))

    def table(self, header: list[str], rows: list[list], widths: list[int], pad_last: bool = False,
              legacy_widths: list[int] | None = None) -> None:
        """One table: Kafka's (a blank line, then header and rows, ``widths`` as ``%-Ns``, the
        last column padded only with ``pad_last``) or the older one (each column as wide as its
        widest cell, at least ``legacy_widths``, which default to ``widths``)."""
        cells = [[str(c) for c in row] for row in [header, *rows]]
        if self.legacy:
            mins = legacy_widths or widths
            sizes = [max([w, *(len(r[i]) for r in cells)]) for i, w in enumerate(mins)]
            self.lines([" ".join(c.ljust(s) for c, s in zip(r, sizes)).rstrip() for r in cells])
            return
        last = len(widths) - 1
        self.lines(["", *(" ".join(c.ljust(w) if i < last or pad_last else c
                                   for i, (c, w) in enumerate(zip(r, widths))) for r in cells)])

    def error(self, text: str) -> None:
        """Kafka's printError (a blank line and ``Error: ...`` on stdout), or the older stderr line."""
        if self.legacy:
            sys.stderr.write(f"Error: {text}\n")
        else:
            sys.stdout.write(f"\nError: {text}\n")

    def notice(self, text: str) -> None:
        """A state notice on stderr (Kafka starts it with a blank line)."""
        self.stderr(text if self.legacy else f"\n{text}")

    def stderr(self, text: str) -> None:
        sys.stderr.write(text + "\n")


def widest(minimum: int, values) -> int:
    return max([minimum, *(len(str(v)) for v in values)])
