"""The ``groupbroker`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from importlib.metadata import PackageNotFoundError, version

from offsets_log import tools
from protocol.registry import describe


def _version() -> str:
    try:
        return version("groupbroker")
    except PackageNotFoundError:
        return "unknown"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupbroker", description="A Kafka broker built around "
                                     "Kafka's consumer-group coordinator.")
    parser.add_argument("--version", action="version", version=f"groupbroker {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("apis", help="print the Kafka APIs and versions this build speaks")
    serve = commands.add_parser("serve", help="run the broker")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=9092)
    serve.add_argument("--data-dir", default="./groupbroker-data")
    log_cmd = commands.add_parser("log", help="offline tools for the offsets logs of a data dir")
    log_cmd.add_argument("action", choices=("dump", "verify", "compact"),
                         help="dump: one line per record; verify: report torn or corrupt records "
                              "(exit 1 if any); compact: compact every shard (broker stopped)")
    log_cmd.add_argument("data_dir")
    log_cmd.add_argument("--shard", type=int, help="only this shard (0-49)")
    return parser


def _log_command(args) -> int:
    out = sys.stdout
    if args.action == "dump":
        for line in tools.dump(args.data_dir, args.shard):
            out.write(line + "\n")
        return 0
    if args.action == "verify":
        problems = tools.verify_all(args.data_dir, args.shard)
        for shard, problem in problems:
            out.write(f"shard {shard}: {problem}\n")
        out.write(f"{len(problems)} problem(s)\n")
        return 1 if problems else 0
    results = tools.compact_all(args.data_dir, int(time.time() * 1000), args.shard)
    for shard, result in results.items():
        out.write(f"shard {shard}: {result}\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "apis":
        sys.stdout.write(describe() + "\n")
        return 0
    if args.command == "log":
        return _log_command(args)
    logging.getLogger("groupbroker").error(
        "the network server is not built yet (issue #4); this build has the codec, the coordinator "
        "and the offsets log")
    return 2


if __name__ == "__main__":
    sys.exit(main())
