"""``groupbroker log dump|verify|compact``: offline tools for a stopped broker's data dir."""

from __future__ import annotations

import sys
import time

from broker.data.topics.verify import verify_topics
from offsets_log import tools


def add_parser(commands) -> None:
    log_cmd = commands.add_parser("log", help="offline tools for the logs of a data dir")
    log_cmd.add_argument("action", choices=("dump", "verify", "compact"),
                         help="dump: one line per offsets-log record; verify: report torn or "
                              "corrupt records in the offsets logs and every topic partition "
                              "(exit 1 if any); compact: compact every shard (broker stopped)")
    log_cmd.add_argument("data_dir")
    log_cmd.add_argument("--shard", type=int, help="only this offsets-log shard (0-49), no topics")


def run(args) -> int:
    out = sys.stdout
    if args.action == "dump":
        for line in tools.dump(args.data_dir, args.shard):
            out.write(line + "\n")
        return 0
    if args.action == "verify":
        problems = [(f"shard {shard}", problem)
                    for shard, problem in tools.verify_all(args.data_dir, args.shard)]
        if args.shard is None:
            problems += [(f"partition {name}", problem)
                         for name, problem in verify_topics(args.data_dir)]
        for where, problem in problems:
            out.write(f"{where}: {problem}\n")
        out.write(f"{len(problems)} problem(s)\n")
        return 1 if problems else 0
    results = tools.compact_all(args.data_dir, int(time.time() * 1000), args.shard)
    for shard, result in results.items():
        out.write(f"shard {shard}: {result}\n")
    return 0
