"""Startup benchmark: how soon ``groupbroker serve`` says it listens, and how soon it answers.

Why: the issue's bar is "time to the listening line at most 0.1 s for an empty data dir and
for one holding 1,000,000 commit records". A broker that must read every shard before it
serves makes a restart of a busy coordinator an outage; Kafka instead accepts at once and
answers COORDINATOR_LOAD_IN_PROGRESS for the partitions it is still loading. So, from the
moment ``python -m broker serve --port 0 --data-dir D`` is spawned, this measures:

* ``line``:   the stdout line ``groupbroker listening on H:P``;
* ``api``:    the first ApiVersions answer (the request is sent once the line is read);
* ``group``:  the first OffsetFetch of one group (whose commits are in D) answered without
  COORDINATOR_LOAD_IN_PROGRESS, asked again every 5 ms as a client retries;
* ``loaded``: the broker's log line saying every shard has loaded (watched in its log file,
  so that no request takes its share of the time measured), then checked with one OffsetFetch
  (v8, one group of each shard) in which no shard may still be loading;

for (a) an empty data dir and (b) one holding ``--records`` offset-commit records (default
1,000,000) spread over the 50 shards, written directly with ``offsets_log`` (ShardLog) once
per run of this script and copied afresh for every start, since a broker writes to its data
dir. Each over ``--runs`` starts: median, min and max. The floor is printed too: the same
interpreter doing nothing (``python -c pass``) and importing trio only, which ``serve``
cannot do without.

The broker runs with its bytecode cached (``PYTHONPYCACHEPREFIX`` under the temp dir, warmed
by one start that is not counted), as an installed package has it; ``--no-bytecode-cache``
runs it in this environment as it is (``PYTHONDONTWRITEBYTECODE=1`` makes every start compile
every module). ``--baseline REV`` also measures the broker of git revision REV (unpacked from
this repository, run on this virtualenv), in the same run.

Run: ``.venv/bin/python bench/startup.py [--runs 5] [--records 1000000] [--baseline REV]``.
Only 127.0.0.1 is ever used.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kafka_client.blocking import BlockingClient  # noqa: E402
from broker.testing.launcher import LISTENING, SHARDS_LOADED  # noqa: E402
from coordinator.routing import DEFAULT_SHARDS, group_per_shard, shard_for  # noqa: E402
from offsets_log.log import ShardLog  # noqa: E402
from offsets_log.records import offset_commit_record  # noqa: E402
from protocol.api_keys import ApiKey  # noqa: E402
from protocol.errors import ErrorCode  # noqa: E402
from protocol.messages import REQUESTS  # noqa: E402

PY = sys.executable
BAR_S = 0.1
#: commits per group: 10 partitions of one topic, each committed 5 times
PARTITIONS, ROUNDS = 10, 5
PROBE_GROUP = "group-0"
LOADING = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
OffsetFetch = REQUESTS[ApiKey.OFFSET_FETCH].cls


def log(msg: str) -> None:
    sys.stderr.write(f"[startup {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# --- the data dir ----------------------------------------------------------------------------

def write_commits(data_dir: str, records: int, shards: int = DEFAULT_SHARDS) -> None:
    """``records`` offset commits of ``records // 50`` groups (``group-N``), each group's
    records in the shard Kafka's hash puts it on, appended in large batches and fsynced once."""
    groups = max(1, records // (PARTITIONS * ROUNDS))
    per_shard: dict[int, list[str]] = {}
    for g in range(groups):
        name = f"group-{g}"
        per_shard.setdefault(shard_for(name, shards), []).append(name)
    written, now_ms = 0, 1_700_000_000_000
    for shard in range(shards):
        log_ = ShardLog.for_shard(data_dir, shard)
        batch = []
        for name in per_shard.get(shard, ()):
            for r in range(ROUNDS):
                for p in range(PARTITIONS):
                    if written == records:
                        break
                    batch.append(offset_commit_record(name, "orders", p, 100 * r + p, 0, "", now_ms))
                    written += 1
            if len(batch) >= 20_000:
                log_.append(batch, now_ms)
                batch = []
        log_.append(batch, now_ms)
        log_.sync()
        log_.close()


def probe_groups(shards: int = DEFAULT_SHARDS) -> list[str]:
    """One group id on each shard."""
    return group_per_shard("probe", shards)


# --- one start -------------------------------------------------------------------------------

def _read_line(proc: subprocess.Popen, deadline: float) -> str:
    fd, data = proc.stdout.fileno(), b""
    while b"\n" not in data and time.perf_counter() < deadline:
        if select.select([fd], [], [], 0.05)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def _read_from(path: str, start: int) -> str:
    with open(path, "rb") as f:
        f.seek(start)
        return f.read().decode(errors="replace")


def _offset_fetch(client: BlockingClient, groups: list[str]):
    request = OffsetFetch(groups=tuple(OffsetFetch.OffsetFetchRequestGroup(group_id=g, topics=None)
                                       for g in groups))
    return client.call(ApiKey.OFFSET_FETCH, 8, request).groups


def start_once(tree: Path, data_dir: str, env: dict, log_path: str, probes: list[str],
               expect_offsets: bool, timeout: float = 120.0) -> dict[str, float]:
    """Spawn the broker of ``tree`` on ``data_dir``; seconds from the spawn to each milestone."""
    cmd = [PY, "-m", "broker", "serve", "--port", "0", "--data-dir", data_dir]
    times: dict[str, float] = {}
    log_start = os.path.getsize(log_path) if os.path.exists(log_path) else 0
    with open(log_path, "ab") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=err,
                                stdin=subprocess.DEVNULL)
    deadline = t0 + timeout
    try:
        line = _read_line(proc, deadline)
        times["line"] = time.perf_counter() - t0
        match = LISTENING.match(line.strip())
        if match is None:
            raise RuntimeError(f"no listening line: {line!r} (log: {log_path})")
        port = int(match.group(1).split(",")[0].rpartition(":")[2])
        client = BlockingClient("127.0.0.1", port, client_id="bench-startup",
                                timeout=timeout)
        try:
            client.negotiate()
            times["api"] = time.perf_counter() - t0
            while True:
                group, = _offset_fetch(client, [PROBE_GROUP])
                if group.error_code != LOADING:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"{PROBE_GROUP} still loading after {timeout}s")
                time.sleep(0.005)
            times["group"] = time.perf_counter() - t0
            if group.error_code != ErrorCode.NONE or expect_offsets != bool(group.topics):
                raise RuntimeError(f"{PROBE_GROUP}: error {group.error_code}, "
                                   f"{len(group.topics)} topics committed")
            # The log says when every shard has loaded: watched in the log file, not asked of
            # the broker, whose answers would take their share of the time being measured.
            while not SHARDS_LOADED.search(_read_from(log_path, log_start)):
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"shards still loading after {timeout}s")
                time.sleep(0.005)
            times["loaded"] = time.perf_counter() - t0
            if any(g.error_code == LOADING for g in _offset_fetch(client, probes)):
                raise RuntimeError("a shard still loading after the log said all had loaded")
        finally:
            client.close()
    finally:
        stop(proc)
        proc.stdout.close()
    return times


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, and SIGKILL if it is still there after 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def floor(env: dict, code: str, runs: int) -> list[float]:
    took = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([PY, "-c", code], env=env, check=True)
        took.append(time.perf_counter() - t0)
    return took


# --- the runs --------------------------------------------------------------------------------

def checkout(rev: str, workdir: str) -> Path:
    """The tree of git revision ``rev`` of this repository, unpacked under ``workdir``."""
    tree = Path(workdir) / f"checkout-{rev}"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def summary(values: list[float]) -> str:
    return (f"median {statistics.median(values):6.3f}  min {min(values):6.3f}  "
            f"max {max(values):6.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="starts per data dir (default 5)")
    parser.add_argument("--records", type=int, default=1_000_000,
                        help="offset commits in the large data dir (default 1,000,000)")
    parser.add_argument("--baseline", metavar="REV", help="also measure the broker of git revision REV")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="run the broker in this environment as it is (no bytecode cache)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-startup-") as work:
        env = dict(os.environ)
        if not args.no_bytecode_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")
        trees = {"ours": REPO}
        if args.baseline:
            trees[args.baseline] = checkout(args.baseline, work)

        large = os.path.join(work, "large")
        started = time.perf_counter()
        write_commits(large, args.records)
        size = sum(f.stat().st_size for f in Path(large).rglob("*") if f.is_file())
        log(f"wrote {args.records:,} commit records ({size / 1e6:.0f} MB) in "
            f"{time.perf_counter() - started:.1f}s")
        probes = probe_groups()

        results: dict[tuple[str, str], dict[str, list[float]]] = {}
        runs = 0
        for name, tree in trees.items():
            start_once(tree, os.path.join(work, f"warm-{name}"), env, os.path.join(work, "warm.log"),
                       probes, expect_offsets=False)                       # compiles the bytecode
        for run in range(args.runs):                 # interleaved, so load drifts hit all alike
            for name, tree in trees.items():
                for kind in ("empty", "large"):
                    runs += 1
                    data_dir = os.path.join(work, f"run-{runs}")
                    if kind == "large":
                        shutil.copytree(large, data_dir)
                    times = start_once(tree, data_dir, env, os.path.join(work, f"{name}.log"), probes,
                                       expect_offsets=kind == "large")
                    shutil.rmtree(data_dir, ignore_errors=True)
                    for milestone, took in times.items():
                        results.setdefault((name, kind), {}).setdefault(milestone, []).append(took)
            log(f"run {run + 1}/{args.runs} done")

        out = sys.stdout
        out.write(f"\nseconds from spawning `python -m broker serve` ({args.runs} starts each; "
                  f"bytecode {'not ' if args.no_bytecode_cache else ''}cached)\n")
        out.write(f"  floor: python -c pass             {summary(floor(env, 'pass', args.runs))}\n")
        out.write(f"  floor: python -c 'import trio'    {summary(floor(env, 'import trio', args.runs))}\n")
        for (name, kind), milestones in results.items():
            label = f"{kind} data dir" if kind == "empty" else f"{args.records:,} commit records"
            out.write(f"\n{name}, {label}:\n")
            for milestone, values in milestones.items():
                verdict = ""
                if milestone == "line":
                    verdict = "  within the 0.1 s bar" if statistics.median(values) <= BAR_S else \
                        "  OVER the 0.1 s bar"
                out.write(f"  {milestone:<7} {summary(values)}{verdict}\n")


if __name__ == "__main__":
    main()
