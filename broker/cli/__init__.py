"""The ``groupbroker`` command line: one module per command.

Each command module imports only what building its arguments needs; what running it needs (the
trio server for ``serve``, Spark for ``report``) is imported when it runs, so ``groupbroker
groups`` and ``groupbroker faults``, plain socket clients, never load the server or trio.
"""

from __future__ import annotations

import argparse
import logging
import sys

from broker.cli import apis, faults, groups, logs, report, serve
from broker.cli.version import groupbroker_version

COMMANDS = {"apis": apis, "serve": serve, "log": logs, "groups": groups, "faults": faults,
            "report": report}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="groupbroker", description="A Kafka broker built around "
                                     "Kafka's consumer-group coordinator.")
    parser.add_argument("--version", action="version", version=f"groupbroker {groupbroker_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
