"""The two durability steps every file in the topics package needs."""

from __future__ import annotations

import os


def fsync_dir(path: str) -> None:
    """Make a directory's entries (created, renamed, removed files) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` so a crash leaves either the old or the new content."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path) or ".")
