"""What the group event journal costs: OffsetCommit throughput with the journal on and off.

Two measurements:

1. In-process, the broker's own work for one OffsetCommit v8 request of 10 partitions, without
   sockets: decode the frame, ``Shard.handle``, append the records to the offsets log (no
   fsync), write the journal line (when on), encode the answer. The minimum CPU time of many
   alternating trials: interference from other processes only ever adds time, so the minimum
   is the stable figure on a shared machine.
2. End to end: a broker (``groupbroker.journal.enable`` true, then false, alternating, in
   fresh data dirs) under bench/loadgen.py's OffsetCommit v8 load (10 partitions of bench-60
   per request, simple commits), ``--rounds`` times each way; prints the median requests per
   second of each, and the broker's CPU time per request (user + system, from /proc, over the
   load run). The broker runs on core 0, the load generator on core 1. On a shared two-core
   virtual machine these swing by a third from run to run (an A/A comparison differs as much
   as on/off), so the first figure is the one to go by there. Both flush settings: Kafka's
   default (commits written, never forced to disk; where the journal's share of the work is
   largest) and ``log.flush.interval.messages=1`` (an fsync before every answer). Only
127.0.0.1 is used. Run: ``.venv/bin/python bench/journal.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from e2e import LOADGEN, PY, REPO, TOPIC, OurBroker, create_topic, log, table  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.header import encode_request  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(journal: bool, fsync: bool, conns: int, inflight: int, seconds: float) -> tuple[float, float]:
    """(requests per second, broker CPU microseconds per request) of one load run."""
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as workdir:
        broker = OurBroker(workdir, {"groupbroker.journal.enable": str(journal).lower(),
                                     **({"log.flush.interval.messages": "1"} if fsync else {})})
        try:
            create_topic(broker.bootstrap)
            os.sched_setaffinity(broker.proc.pid, {0})       # one core each: no contention
            cpu = cpu_seconds(broker.proc.pid)
            out = subprocess.run(["taskset", "-c", "1",PY, LOADGEN, "rate", "--port", str(broker.port), "--api", "commit",
                                  "--conns", str(conns), "--inflight", str(inflight), "--seconds",
                                  str(seconds), "--warmup", "0", "--topic", TOPIC, "--tag", "jr"],
                                 cwd=REPO, capture_output=True, text=True, timeout=120 + seconds, check=True)
            cpu = cpu_seconds(broker.proc.pid) - cpu
            result = json.loads(out.stdout.strip().splitlines()[-1])
            return result["rate"], cpu / result["requests"] * 1e6
        finally:
            broker.stop()


#: commits between two periodic journal writes in the in-process measurement: a second's worth
#: at the end-to-end rate
TICK_COMMITS = 5000


def request_path(journal: bool, workdir: str):
    """One commit through the broker's code, in-process: a callable doing it once."""
    from broker.config import BrokerConfig
    from broker.journal.recorder import BrokerJournal
    from topic_log import TopicStore
    from coordinator.actions import Journal, Persist, RequestContext
    from coordinator.routing import shard_for
    from coordinator.shard import Shard
    from offsets_log.log import ShardLog
    from protocol import REQUESTS
    from protocol.header import decode_request, encode_response

    request = REQUESTS[ApiKey.OFFSET_COMMIT].cls
    topic = request.OffsetCommitRequestTopic
    body = request(group_id="bench", generation_id_or_member_epoch=-1, member_id="", topics=(topic(
        name=TOPIC, partitions=tuple(topic.OffsetCommitRequestPartition(partition_index=p, committed_offset=p)
                                     for p in range(10))),))
    frame = encode_request(8, 8, 1, body, "bench")[4:]
    number = shard_for("bench", 50)
    shard = Shard(number, journal=journal)
    log_ = ShardLog.for_shard(workdir, number)
    sink = BrokerJournal(BrokerConfig(data_dir=workdir)) if journal else None
    if sink is not None:
        sink.store = TopicStore(workdir)
    clock = [0]

    def once() -> None:
        clock[0] += 1
        decoded = decode_request(frame)
        for action in shard.handle(clock[0], RequestContext(None, ApiKey.OFFSET_COMMIT, 8),
                                  decoded.body).actions:
            if isinstance(action, Persist):
                log_.append(action.records, clock[0])
            elif isinstance(action, Journal):
                sink.record(action)
            else:
                encode_response(8, 8, decoded.header.correlation_id, action.response)
        if sink is not None and clock[0] % TICK_COMMITS == 0:      # the broker's periodic write
            sink.write_commits()
            sink.writer.flush()
    return once


def in_process(trials: int, per_trial: int) -> tuple[float, float]:
    """Minimum CPU microseconds per commit, journal (off, on)."""
    with tempfile.TemporaryDirectory() as off_dir, tempfile.TemporaryDirectory() as on_dir:
        paths = {False: request_path(False, off_dir), True: request_path(True, on_dir)}
        best = {False: float("inf"), True: float("inf")}
        for _ in range(trials):
            for journal, once in paths.items():
                start = time.process_time()
                for _ in range(per_trial):
                    once()
                best[journal] = min(best[journal], (time.process_time() - start) / per_trial * 1e6)
    return best[False], best[True]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--inflight", type=int, default=32)
    ap.add_argument("--trials", type=int, default=30, help="in-process trials each way")
    args = ap.parse_args()
    off, on = in_process(args.trials, 2000)
    print(table("1. in-process: CPU per OffsetCommit v8 request (10 partitions), minimum of "
                f"{args.trials} trials", ["journal off us", "journal on us", "cost"],
                [[f"{off:.1f}", f"{on:.1f}", f"{on / off - 1:+.1%}"]]))
    rows = []
    for fsync in (True, False):
        runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for i in range(args.rounds):
            for journal in ((True, False) if i % 2 == 0 else (False, True)):
                log(f"fsync={fsync} journal={journal} round {i + 1}/{args.rounds}")
                runs[journal].append(measure(journal, fsync, args.conns, args.inflight, args.seconds))
        rate = {j: statistics.median(r for r, _ in runs[j]) for j in runs}
        cpu = {j: statistics.median(c for _, c in runs[j]) for j in runs}
        rows.append(["flush.messages=1" if fsync else "default flush", f"{rate[False]:,.0f}", f"{rate[True]:,.0f}",
                     f"{1 - rate[True] / rate[False]:+.1%}", f"{cpu[False]:.0f}", f"{cpu[True]:.0f}",
                     f"{cpu[True] / cpu[False] - 1:+.1%}"])
    print()
    print(table(f"2. end to end: OffsetCommit v8 (10 partitions), {args.conns} connections x {args.inflight} in flight, "
                f"median of {args.rounds} runs of {args.seconds:g} s each way",
                ["commits", "req/s off", "req/s on", "throughput cost", "broker CPU us/req off",
                 "us/req on", "CPU cost"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
