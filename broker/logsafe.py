"""Client-supplied strings (client ids, topic and group names) made safe for one log line.

A client chooses these strings freely: raw, a newline forges a log line and an escape sequence
repaints a terminal. :func:`safe` escapes every non-printable character as ``repr`` would (and
the backslash itself, so an escape in the output is never the client's own text), and cuts very
long values, saying how long they were.
"""

from __future__ import annotations

#: Characters of a client string shown in a log line; the rest is summarised by its length.
LIMIT = 200


def safe(value: object, limit: int = LIMIT) -> str:
    """``value`` as text fit for a log line: non-printables escaped, at most ``limit`` characters."""
    if value is None:
        return "None"
    text = value if isinstance(value, str) else str(value)
    cut = text[:limit]
    if not (cut.isprintable() and "\\" not in cut):
        cut = "".join(c if c.isprintable() and c != "\\" else _escape(c) for c in cut)
    if len(text) > limit:
        cut += f"...({len(text)} chars)"
    return cut


def _escape(char: str) -> str:
    """A non-printable character (or the backslash) as its Python escape."""
    return "\\\\" if char == "\\" else repr(char)[1:-1]
