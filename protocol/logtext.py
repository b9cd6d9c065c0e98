"""Client-supplied strings (client, group, member and topic names) made fit for one log line.

A client chooses these freely and a log line is written per request: raw, a newline forges a
log line, an escape sequence repaints a terminal, and a 32 KiB id (or fifty of them) floods
the log. :func:`safe` escapes every non-printable character as ``repr`` would (and the
backslash itself, so an escape in the output is never the client's own text) and cuts long
values, saying how long they were.
"""

from __future__ import annotations

#: Characters of a client string shown in a log line; the rest is summarised by its length.
LIMIT = 120
#: Items of a list of client strings shown in a log line.
ITEMS = 10


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


def safe_list(values) -> str:
    """A list of client strings as ``['a', 'b', ...]``, each made :func:`safe`, at most
    :data:`ITEMS` of them (the rest counted)."""
    values = list(values)
    shown = ", ".join(f"'{safe(v)}'" for v in values[:ITEMS])
    more = f", ... (+{len(values) - ITEMS} more)" if len(values) > ITEMS else ""
    return f"[{shown}{more}]"


def _escape(char: str) -> str:
    """A non-printable character (or the backslash) as its Python escape."""
    return "\\\\" if char == "\\" else repr(char)[1:-1]
