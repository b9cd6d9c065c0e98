"""The topic logs' writes and fsyncs, behind a switch that makes them fail."""

from __future__ import annotations

import os


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
