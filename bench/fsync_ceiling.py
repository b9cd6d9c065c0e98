"""The ceiling on durable commits that this disk allows: how many fsync passes per second.

With ``log.flush.interval.messages=1`` a commit is answered only after an fsync covers it,
and the broker makes one fsync pass across every shard with unflushed records (a commit
arriving during a pass waits for the next one). So commits per second can reach at most
``passes per second x commits per pass``; a serial client gets one commit per pass. This
prints passes per second for one dirty shard file and for S dirty files, with the S fsyncs
issued one after another and concurrently (concurrent fsyncs can share a journal commit),
so ``bench/e2e.py --set log.flush.interval.messages=1`` can be read against it.

Run: ``.venv/bin/python bench/fsync_ceiling.py [--seconds 2] [--files 1 4 16]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

RECORD = b"x" * 120          # about one offset commit frame


def passes_per_second(root: str, files: int, seconds: float, pool: ThreadPoolExecutor | None) -> float:
    """Append a record to each of ``files`` files, then fsync them all; passes per second."""
    fds = [os.open(os.path.join(root, f"shard-{n}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
           for n in range(files)]
    try:
        passes, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for fd in fds:
                os.write(fd, RECORD)
            if pool is None:
                for fd in fds:
                    os.fsync(fd)
            else:
                list(pool.map(os.fsync, fds))
            passes += 1
        return passes / (time.perf_counter() - start)
    finally:
        for fd in fds:
            os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--files", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as root, ThreadPoolExecutor(max(args.files)) as pool:
        print(f"fsync passes per second on {root}'s disk, {args.seconds:.0f} s each")
        print(f"{'dirty files':>12} {'one after another':>18} {'concurrent':>11} {'fsyncs/s (best)':>16}")
        for files in args.files:
            serial = passes_per_second(root, files, args.seconds, None)
            concurrent = passes_per_second(root, files, args.seconds, pool) if files > 1 else serial
            best = max(serial, concurrent)
            print(f"{files:>12} {serial:>18,.0f} {concurrent:>11,.0f} {best * files:>16,.0f}")
        print("ceiling for a serial committer = passes/s with 1 dirty file; with more clients, "
              "each pass carries every commit that arrived during the one before")


if __name__ == "__main__":
    main()
