"""The few filesystem operations the logs need, behind an interface tests can fake.

``FakeFS`` models what a crash keeps: file bytes as of their last ``fsync`` and directory
entries as of the directory's last ``fsync_dir`` (kfake's ``memFS``, with crash semantics).
"""

from __future__ import annotations

import errno
import os
import posixpath
import threading
from typing import Protocol

from .disk import Disk


class SimulatedCrash(Exception):
    """Raised by :class:`FakeFS` when a test asks it to crash at an operation."""


class FS(Protocol):
    def makedirs(self, path: str) -> None: ...
    def listdir(self, path: str) -> list[str]: ...
    def exists(self, path: str) -> bool: ...
    def create(self, path: str) -> None: ...
    def append(self, path: str, data: bytes) -> None: ...
    def read(self, path: str) -> bytes: ...
    def size(self, path: str) -> int: ...
    def truncate(self, path: str, size: int) -> None: ...
    def fsync(self, path: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...
    def remove(self, path: str) -> None: ...
    def fsync_dir(self, path: str) -> None: ...


class _Handle:
    """An open segment file and how many fsyncs are using it right now."""
    __slots__ = ("file", "users", "closing")

    def __init__(self, file) -> None:
        self.file, self.users, self.closing = file, 0, False


class RealFS:
    """The operating system's filesystem: one descriptor per file being appended to, kept open.

    Appends and fsyncs share that descriptor, so a busy log never opens another one (no
    EMFILE under load). An fsync runs outside the lock, so appends go on meanwhile; if another
    thread closes the file then (rename, truncate, remove), the close waits for the fsync.
    """

    def __init__(self) -> None:
        self._handles: dict[str, _Handle] = {}
        self._lock = threading.Lock()

    def _handle(self, path: str, *, create: bool) -> _Handle:
        """The path's open handle (lock held by the caller); opened if absent."""
        handle = self._handles.get(path)
        if handle is None:
            flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if create else 0)
            handle = self._handles[path] = _Handle(open(os.open(path, flags, 0o644), "ab", buffering=0))
        return handle

    def _close(self, path: str) -> None:
        with self._lock:
            handle = self._handles.pop(path, None)
            if handle is not None and handle.users:
                handle.closing = True          # the last fsync using it closes it
                handle = None
        if handle is not None:
            handle.file.close()

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def create(self, path: str) -> None:
        self._close(path)
        with open(path, "wb"):
            pass

    def append(self, path: str, data: bytes) -> None:
        with self._lock:
            f = self._handle(path, create=True).file
        view = memoryview(data)
        while view:                      # unbuffered writes may be short
            view = view[f.write(view):]

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def truncate(self, path: str, size: int) -> None:
        self._close(path)
        os.truncate(path, size)

    def fsync(self, path: str) -> None:
        with self._lock:
            handle = self._handle(path, create=False)
            handle.users += 1
        try:
            os.fsync(handle.file.fileno())
        finally:
            with self._lock:
                handle.users -= 1
                last = handle.closing and not handle.users
            if last:
                handle.file.close()

    def rename(self, src: str, dst: str) -> None:
        self._close(src)
        self._close(dst)
        os.replace(src, dst)

    def remove(self, path: str) -> None:
        self._close(path)
        os.remove(path)

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        with self._lock:
            handles, self._handles = self._handles, {}
            idle = [h for h in handles.values() if not h.users]
            for h in handles.values():
                h.closing = True
        for h in idle:
            h.file.close()


class _Inode:
    __slots__ = ("data", "durable")

    def __init__(self) -> None:
        self.data = bytearray()
        self.durable = b""


def _eio(what: str) -> OSError:
    return OSError(errno.EIO, f"injected failure: {what}")


class FakeFS:
    """In-memory filesystem with fault injection and crash simulation.

    * ``fail_next_write`` / ``fail_next_fsync``: the next append / fsync raises ``OSError``
      (a failed append writes ``fail_partial`` bytes first, a torn write).
    * ``disk``: the :class:`~log_store.disk.Disk` switch; while it fails, every append (after
      ``fail_partial`` bytes) and fsync raises its error, as the topic logs' writes do.
    * ``crash_after_ops = n``: the (n+1)-th mutating operation raises :class:`SimulatedCrash`
      without taking effect; then call :meth:`crash` to lose everything not made durable.
    """

    def __init__(self) -> None:
        self.dirs: set[str] = set()
        self.entries: dict[str, _Inode] = {}        # visible names
        self.durable_entries: dict[str, _Inode] = {}  # names as of each dir's last fsync_dir
        self.fail_next_write = False
        self.fail_partial = 0
        self.fail_next_fsync = False
        self.disk = Disk()
        self.crash_after_ops: int | None = None
        self.ops = 0

    def _mutate(self, what: str) -> None:
        if self.crash_after_ops is not None and self.ops >= self.crash_after_ops:
            raise SimulatedCrash(f"crash before {what}")
        self.ops += 1

    def _node(self, path: str) -> _Inode:
        try:
            return self.entries[path]
        except KeyError:
            raise FileNotFoundError(errno.ENOENT, "no such file", path) from None

    def crash(self) -> None:
        """Power loss: keep only fsynced bytes and fsynced directory entries."""
        self.entries = dict(self.durable_entries)
        for node in self.entries.values():
            node.data = bytearray(node.durable)
        self.crash_after_ops = None

    def makedirs(self, path: str) -> None:
        self.dirs.add(path)      # directories themselves are modelled as always durable

    def listdir(self, path: str) -> list[str]:
        if path not in self.dirs:
            raise FileNotFoundError(errno.ENOENT, "no such directory", path)
        children = [*self.entries, *self.dirs]
        return sorted({posixpath.basename(p) for p in children if posixpath.dirname(p) == path})

    def exists(self, path: str) -> bool:
        return path in self.entries or path in self.dirs

    def create(self, path: str) -> None:
        self._mutate(f"create {path}")
        self.entries[path] = _Inode()

    def append(self, path: str, data: bytes) -> None:
        node = self._node(path)
        self._mutate(f"append {path}")
        if self.fail_next_write:
            self.fail_next_write = False
            node.data += data[:self.fail_partial]
            raise _eio(f"write {path}")
        try:
            self.disk.check(path)
        except OSError:
            node.data += data[:self.fail_partial]
            raise
        node.data += data

    def read(self, path: str) -> bytes:
        return bytes(self._node(path).data)

    def size(self, path: str) -> int:
        return len(self._node(path).data)

    def truncate(self, path: str, size: int) -> None:
        node = self._node(path)
        self._mutate(f"truncate {path}")
        del node.data[size:]

    def fsync(self, path: str) -> None:
        node = self._node(path)
        self._mutate(f"fsync {path}")
        if self.fail_next_fsync:
            self.fail_next_fsync = False
            raise _eio(f"fsync {path}")
        self.disk.check(path)
        node.durable = bytes(node.data)

    def rename(self, src: str, dst: str) -> None:
        node = self._node(src)
        self._mutate(f"rename {src} -> {dst}")
        del self.entries[src]
        self.entries[dst] = node

    def remove(self, path: str) -> None:
        self._node(path)
        self._mutate(f"remove {path}")
        del self.entries[path]

    def fsync_dir(self, path: str) -> None:
        self._mutate(f"fsync_dir {path}")
        if self.fail_next_fsync:
            self.fail_next_fsync = False
            raise _eio(f"fsync_dir {path}")
        self.disk.check(path)
        kept = {p: n for p, n in self.durable_entries.items() if posixpath.dirname(p) != path}
        kept.update({p: n for p, n in self.entries.items() if posixpath.dirname(p) == path})
        self.durable_entries = kept
