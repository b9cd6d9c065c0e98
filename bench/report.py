"""The analytics job at scale: a synthetic data dir of 1,000,000 commits, then ``groupbroker
report`` on it in local mode.

The data dir is what a broker would leave: 1,000 groups (routed to the 50 shards as Kafka
routes them), each committing 10 partitions of one of 20 topics 100 times (the offsets logs get
every commit record, plus each group's metadata records), and the journal with their
rebalances, errors, merged commits and log-end samples every 2.5 s. Some groups fall behind,
stall or stop, so every lag rule has work. It then runs the job (``local[2]`` by default) and
prints the time, records read per second (offsets-log records plus journal lines) and the
peak resident memory of the driver: this Python process and Spark's JVM.

Run: ``.venv/bin/python bench/report.py [--commits N] [--keep DIR]``. Only 127.0.0.1 is used.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordinator.routing import shard_for  # noqa: E402
from offsets_log.journal import JournalWriter, journal_dir  # noqa: E402
from offsets_log.log import ShardLog  # noqa: E402
from offsets_log.records import MemberMetadata, group_metadata_record, offset_commit_record  # noqa: E402

GROUPS, TOPICS, PARTITIONS, SHARDS = 1_000, 20, 10, 50
START_MS = 1_790_000_000_000
COMMIT_EVERY_MS, SAMPLE_EVERY_MS = 5_000, 2_500


def log(msg: str) -> None:
    sys.stderr.write(f"[report-bench {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def build(data_dir: str, commits: int, seed: int = 6) -> tuple[int, int]:
    """Write the synthetic data dir; (offsets-log records, journal lines)."""
    rng = random.Random(seed)
    rounds = max(1, -(-commits // (GROUPS * PARTITIONS)))
    logs = {n: ShardLog.for_shard(data_dir, n) for n in range(SHARDS)}
    journal = JournalWriter(journal_dir(data_dir), START_MS)
    journal.append({"t": START_MS, "event": "journal_opened", "node": 1})
    end_ms = START_MS + rounds * COMMIT_EVERY_MS
    # produce rates per topic: the log end grows linearly
    rate = {t: rng.randint(5, 50) for t in range(TOPICS)}

    def log_end(topic: int, t: int) -> int:
        return rate[topic] * (t - START_MS) // 1000

    events: list[tuple[int, dict]] = []
    records = 0
    for g in range(GROUPS):
        group, topic = f"group-{g:04d}", g % TOPICS
        shard = shard_for(group, SHARDS)
        members = [f"consumer-{g}-{i}" for i in range(rng.randint(1, 4))]
        behaviour = rng.choices(["keeps-up", "behind", "stalls", "stops"], [70, 15, 10, 5])[0]
        # a group that stops commits as often as the others, twice as fast, in the first half
        cadence = COMMIT_EVERY_MS // 2 if behaviour == "stops" else COMMIT_EVERY_MS
        generation = 0
        spacing = rounds * COMMIT_EVERY_MS // 4          # between the rebalances of a group
        for rebalance in range(rng.randint(1, 4)):
            t = START_MS + rebalance * spacing + 100
            cause = "new_member" if rebalance == 0 else rng.choice(["new_member", "member_left", "session_expiry"])
            events.append((t, {"t": t, "shard": shard, "event": "rebalance_started", "group": group,
                               "generation": generation, "cause": cause, "members": members}))
            generation += 1
            took = rng.randint(10, max(20, min(30_000, spacing // 2)))
            events.append((t + took, {"t": t + took, "shard": shard, "event": "rebalance_completed",
                                      "group": group, "generation": generation, "members": members,
                                      "leader": members[0], "protocol": "range"}))
            events.append((t + took + 5, {"t": t + took + 5, "shard": shard, "event": "sync_completed",
                                          "group": group, "generation": generation, "members": members,
                                          "protocol": "range"}))
            value = [MemberMetadata(member_id=m, group_instance_id=None, client_id=m, client_host="/127.0.0.1",
                                    rebalance_timeout=300_000, session_timeout=45_000, subscription=b"",
                                    assignment=b"") for m in members]
            logs[shard].append([group_metadata_record(group, protocol_type="consumer", generation=generation,
                                                      protocol="range", leader=members[0],
                                                      current_state_ts=t + took, members=value)], t + took)
            records += 1
            if rng.random() < 0.3:
                events.append((t + took + 50, {"t": t + took + 50, "shard": shard, "event": "error",
                                               "group": group, "generation": generation,
                                               "member": rng.choice(members), "api": "OffsetCommit",
                                               "error": "ILLEGAL_GENERATION",
                                               "generation_sent": generation - 1}))
        committed = [0] * PARTITIONS
        for r in range(rounds):
            t = START_MS + (r + 1) * cadence + g
            end = log_end(topic, t)
            for p in range(PARTITIONS):
                if behaviour == "keeps-up":
                    committed[p] = end
                elif behaviour == "behind":
                    committed[p] = max(committed[p], end * 9 // 10)
                elif behaviour == "stalls" and r < rounds // 2:
                    committed[p] = end
                elif behaviour == "stops":
                    committed[p] = end
            batch = [offset_commit_record(group, f"topic-{topic:02d}", p, committed[p], 0, "", t)
                     for p in range(PARTITIONS)]
            logs[shard].append(batch, t)
            records += len(batch)
            events.append((t, {"t": t, "shard": shard, "event": "offsets_committed", "group": group,
                               "generation": generation, "member": members[0], "generation_sent": generation,
                               "commits": 1, "offsets": [{"topic": f"topic-{topic:02d}",
                                                          "partitions": list(range(PARTITIONS)),
                                                          "offsets": list(committed)}]}))
    for t in range(START_MS, end_ms + SAMPLE_EVERY_MS, SAMPLE_EVERY_MS):
        for topic in range(TOPICS):
            for p in range(PARTITIONS):
                events.append((t, {"t": t, "event": "log_end_offset", "topic": f"topic-{topic:02d}",
                                   "partition": p, "offset": log_end(topic, t), "log_start": 0}))
    events.sort(key=lambda e: e[0])
    for _, event in events:
        journal.append(event)
    journal.close()
    for shard_log in logs.values():
        shard_log.close()
    return records, len(events) + 1


def peak_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=1_000_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--keep", help="build (or reuse) the data dir here and keep it")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-report-")
    data_dir = args.keep or os.path.join(work, "data")
    try:
        if os.path.isdir(os.path.join(data_dir, "journal")):
            log(f"reusing {data_dir}")
            records = lines = None
        else:
            log(f"building {args.commits:,} commits in {data_dir}")
            started = time.monotonic()
            records, lines = build(data_dir, args.commits)
            log(f"built {records:,} offsets-log records and {lines:,} journal lines "
                f"in {time.monotonic() - started:.0f} s")
        from pipeline.job import run, spark_session
        spark = spark_session(args.master, progress=False)
        jvm = spark.sparkContext._gateway.proc.pid
        started = time.monotonic()
        paths = run(spark, [data_dir], os.path.join(work, "out"))
        elapsed = time.monotonic() - started
        rows = {name: spark.read.parquet(path).count() for name, path in paths.items() if name != "report"}
        jvm_kb, py_kb = peak_kb(jvm), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        spark.stop()
        print(f"job on {args.master}: {elapsed:.1f} s")
        if records is not None:
            total = records + lines
            print(f"read {records:,} offsets-log records + {lines:,} journal lines = "
                  f"{total / elapsed:,.0f} records/s")
        print("tables: " + ", ".join(f"{name} {n:,} rows" for name, n in rows.items()))
        print(f"driver peak RSS: JVM {jvm_kb / 1024:,.0f} MiB, Python {py_kb / 1024:,.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
