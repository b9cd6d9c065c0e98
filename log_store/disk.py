"""The one switch that makes a disk fail: every log's writes and fsyncs consult it."""

from __future__ import annotations

import os


class Disk:
    """Writes and fsyncs behind a switch that makes them fail.

    Storage failures must be answerable (KAFKA_STORAGE_ERROR) and survivable: ``fail(errno)``
    makes every later write and fsync raise that error (ENOSPC, EIO) until ``heal()``, so a
    test drives a full or failing disk deterministically. The topic logs write through one
    instance per store; :class:`log_store.fs.FakeFS` consults its own, so the offsets logs'
    tests fail a disk the same way.
    """

    def __init__(self) -> None:
        self.failing: int | None = None

    def fail(self, error: int) -> None:
        self.failing = error

    def heal(self) -> None:
        self.failing = None

    def check(self, what: str) -> None:
        """Raise the injected error, if any, for an operation on ``what``."""
        if self.failing is not None:
            raise OSError(self.failing, f"{os.strerror(self.failing)} (injected)", what)

    def write(self, fd: int, data: memoryview, path: str) -> int:
        self.check(path)
        return os.write(fd, data)

    def fsync(self, fd: int, path: str) -> None:
        self.check(path)
        os.fsync(fd)
