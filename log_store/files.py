"""Durable file changes: a directory's entries fsynced, and a small file replaced whole so that a
crash leaves either the old or the new content (the settings, metadata and token files)."""

from __future__ import annotations

import os


def fsync_dir(path: str) -> None:
    """Make a directory's entries (created, renamed, removed files) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, text: str, *, durable: bool = True, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` (a file of ``mode``) so a crash leaves either the old or
    the new content: a temporary file, fsynced, renamed over it, the directory fsynced.

    ``durable=False`` skips the fsyncs, for files that recovery can rebuild if a power loss
    takes them (a crash of the process alone loses nothing written).
    """
    tmp = path + ".tmp"
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w", encoding="utf-8") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        fsync_dir(os.path.dirname(path) or ".")
