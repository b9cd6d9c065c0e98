"""The security folder's files (``<data-dir>/security/``): each rewritten whole and crash-safely
(a temporary file, fsynced, renamed over the old one, the folder fsynced), under an advisory
lock, so the broker and ``groupbroker`` commands may change them at the same time."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os

from log_store.files import atomic_write

FOLDER = "security"


@contextlib.contextmanager
def locked(folder: str):
    """Hold the folder's lock (a read-modify-write of one of its files)."""
    with open(os.path.join(folder, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_atomically(path: str, document) -> None:
    atomic_write(path, json.dumps(document, indent=1, sort_keys=True))
