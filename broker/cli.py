"""The ``groupbroker`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from importlib.metadata import PackageNotFoundError, version

from broker import faults_cli, groups_cli
from broker.data.topics.verify import verify_topics
from offsets_log import tools
from pipeline import options as report_options
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
    commands.add_parser("apis", help="print the Kafka APIs and versions this broker serves (what "
                                         "ApiVersions advertises)")
    serve = commands.add_parser("serve", help="run the broker")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on; 0 picks a free one (default 9092)")
    serve.add_argument("--data-dir", help="where logs live (default ./groupbroker-data)")
    serve.add_argument("--config", help="a server.properties file (Kafka's config names)")
    serve.add_argument("--admin-port", type=int, help="serve the fault-injection admin endpoint "
                       "(groupbroker faults) on this port of 127.0.0.1; 0 picks a free one (logged)")
    serve.add_argument("-o", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="set one config by Kafka's name, e.g. -o group.initial.rebalance.delay.ms=0")
    log_cmd = commands.add_parser("log", help="offline tools for the logs of a data dir")
    log_cmd.add_argument("action", choices=("dump", "verify", "compact"),
                         help="dump: one line per offsets-log record; verify: report torn or "
                              "corrupt records in the offsets logs and every topic partition "
                              "(exit 1 if any); compact: compact every shard (broker stopped)")
    log_cmd.add_argument("data_dir")
    log_cmd.add_argument("--shard", type=int, help="only this offsets-log shard (0-49), no topics")
    groups_cli.add_parser(commands)
    faults_cli.add_parser(commands)
    report = commands.add_parser("report", help="the analytics report (PySpark) over data dirs' "
                                 "offsets logs and group event journals")
    report_options.add_arguments(report)
    report.set_defaults(master="local[*]")
    return parser


def _log_command(args) -> int:
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


def _report(args) -> int:
    try:
        from pipeline.job import run_args
    except ImportError as e:
        logging.getLogger("groupbroker").error(
            "the report needs the 'report' extra (pip install 'groupbroker[report]'): %s", e)
        return 2
    return run_args(args)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "apis":
        from broker.dispatch.api_versions import SERVED_APIS
        sys.stdout.write(describe(SERVED_APIS) + "\n")
        return 0
    if args.command == "log":
        return _log_command(args)
    if args.command == "groups":
        return groups_cli.run(args)
    if args.command == "faults":
        return faults_cli.run(args)
    if args.command == "report":
        return _report(args)
    return _serve(args)


def _serve(args) -> int:
    from broker.config import ConfigError, BrokerConfig, parse_properties
    from broker.server.run import run_until_signalled

    try:
        props = {}
        if args.config:
            with open(args.config, encoding="utf-8") as f:
                props.update(parse_properties(f.read()))
        props.update(parse_properties("\n".join(args.overrides)))
        config = BrokerConfig.build(props, host=args.host, port=args.port, data_dir=args.data_dir,
                                     admin_port=args.admin_port)
    except (OSError, ConfigError) as e:
        logging.getLogger("groupbroker").error("bad configuration: %s", e)
        return 2
    return run_until_signalled(config)


if __name__ == "__main__":
    sys.exit(main())
