"""Run code where the process cannot open one more file descriptor (EMFILE)."""

from __future__ import annotations

import contextlib
import os
import resource


@contextlib.contextmanager
def no_new_descriptors():
    """Lower RLIMIT_NOFILE to the lowest free descriptor number: every open() fails with
    EMFILE, while descriptors already open keep working."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = os.open(os.devnull, os.O_RDONLY)
    os.close(lowest_free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
