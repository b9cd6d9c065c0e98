"""Client-supplied text in log lines.

Group, member and instance ids come from clients and may be 32 KiB each; a line logged per
request must not copy them whole (nor a list of fifty of them).
"""

from __future__ import annotations

SHOWN_CHARS = 120


def clip(text: object) -> str:
    """``text`` as a string, cut to :data:`SHOWN_CHARS` with its full length noted."""
    text = str(text)
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}...({len(text)} chars)"
