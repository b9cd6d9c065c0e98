"""Offsets-log throughput on this machine's disk.

Prints: commits per second written without an fsync (Kafka's default flush settings) and
with one fsync each (bench/fsync_ceiling.py has fsync passes across shards); recovery time of a shard log holding 1,000,000 commit records; and
compaction throughput next to the disk's sequential write rate measured in the same run with
``dd conv=fdatasync`` (their ratio). Run: ``.venv/bin/python bench/offsets_log.py [--records N]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from offsets_log.compaction import compact  # noqa: E402
from offsets_log.log import ShardLog  # noqa: E402
from offsets_log.records import offset_commit_record  # noqa: E402


def commit(i: int):
    return offset_commit_record("bench-group", f"topic-{i % 20}", i % 12, i, 3, "", 1_700_000_000_000)


def commits_per_second(root: str, fsync: bool, seconds: float) -> float:
    """One client committing one record at a time: written only (Kafka's default flush
    settings), or fsynced before the next (``log.flush.interval.messages=1``, one shard)."""
    path = tempfile.mkdtemp(dir=root)
    log = ShardLog(path)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        log.append([commit(done)], 0)
        if fsync:
            log.sync()
        done += 1
    rate = done / (time.perf_counter() - start)
    log.close()
    shutil.rmtree(path)
    return rate


def build_log(path: str, records: int, distinct_keys: int) -> ShardLog:
    log = ShardLog(path, segment_bytes=4 << 20)
    batch = []
    for i in range(records):
        batch.append(offset_commit_record("bench-group", f"topic-{i % 50}", (i // 50) % (distinct_keys // 50),
                                          i, 3, "", 1_700_000_000_000))
        if len(batch) == 10_000:
            log.append(batch, 0)
            batch = []
    log.append(batch, 0)
    log.append([commit(-1)], 0)
    log.fs.fsync(log.active_path)
    return log


def dd_write_mb_per_s(root: str, mb: int = 256) -> float:
    target = os.path.join(root, "dd.out")
    out = subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mb}", "conv=fdatasync"],
                         capture_output=True, text=True, check=True).stderr
    os.remove(target)
    m = re.search(r"copied, ([\d.]+) s", out)
    return mb * 1.048576 / float(m.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="groupbroker-bench-", dir=os.getcwd())
    try:
        print(f"{'measurement':<52} {'value':>14}")
        for fsync, label in ((False, "commits/s written, no fsync (Kafka's default)"),
                             (True, "commits/s, fsync per record (flush.messages=1)")):
            print(f"{label:<52} {commits_per_second(root, fsync, args.seconds):>14,.0f}")
        path = os.path.join(root, "__consumer_offsets-0")
        log = build_log(path, args.records, distinct_keys=5_000)
        size = sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))
        log.close()
        start = time.perf_counter()
        reopened = ShardLog(path)
        records = len(reopened.read_all())
        elapsed = time.perf_counter() - start
        print(f"{f'recovery of {records:,} records ({size / 1e6:.0f} MB), s':<52} {elapsed:>14.2f}")
        start = time.perf_counter()
        result = compact(reopened, now_ms=0)
        elapsed = time.perf_counter() - start
        rate = result.bytes_in / 1e6 / elapsed
        disk = dd_write_mb_per_s(root)
        print(f"{'compaction, MB/s of input':<52} {rate:>14.1f}")
        print(f"{'dd conv=fdatasync sequential write, MB/s':<52} {disk:>14.1f}")
        print(f"{'compaction / dd ratio':<52} {rate / disk:>14.2f}")
        reopened.close()
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
