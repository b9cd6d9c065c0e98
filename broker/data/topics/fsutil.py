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


def atomic_write(path: str, text: str, *, durable: bool = True) -> None:
    """Replace ``path`` with ``text`` so a crash leaves either the old or the new content.

    ``durable=False`` skips the fsyncs, for files that recovery can rebuild if a power loss
    takes them (a crash of the process alone loses nothing written).
    """
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        fsync_dir(os.path.dirname(path) or ".")


class Disk:
    """The writes and fsyncs of the topic logs, behind a switch that makes them fail.

    Storage failures must be answerable (KAFKA_STORAGE_ERROR) and survivable: ``fail(errno)``
    makes every later write and fsync raise that error (ENOSPC, EIO) until ``heal()``, so a
    test drives a full or failing disk deterministically. One instance serves a whole store.
    """

    def __init__(self) -> None:
        self.failing: int | None = None

    def fail(self, error: int) -> None:
        self.failing = error

    def heal(self) -> None:
        self.failing = None

    def _check(self, what: str) -> None:
        if self.failing is not None:
            raise OSError(self.failing, f"{os.strerror(self.failing)} (injected)", what)

    def write(self, fd: int, data: memoryview, path: str) -> int:
        self._check(path)
        return os.write(fd, data)

    def fsync(self, fd: int, path: str) -> None:
        self._check(path)
        os.fsync(fd)
