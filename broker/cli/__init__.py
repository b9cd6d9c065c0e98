"""The ``groupbroker`` command line: one module per command.

Only the command that runs is imported (``groupbroker --help`` and a command line that names
no command import them all, to list them), and each command module imports only what
building its arguments needs; what running it needs (the trio server for ``serve``, Spark for
``report``) is imported when it runs. So ``groupbroker serve`` loads neither the fault
client nor the log tools, and ``groupbroker groups`` and ``groupbroker faults``, plain socket
clients, never load the server or trio.
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib import import_module

#: command -> its module under broker.cli (or, dotted, elsewhere), in the order ``groupbroker --help``
#: lists them
COMMANDS = {"apis": "apis", "serve": "serve", "log": "logs", "groups": "kafka_tools.groups",
            "transactions": "transactions", "faults": "faults", "certs": "certs", "users": "users",
            "report": "report"}


def command(name: str):
    """The module of command ``name`` (imported on first use)."""
    module = COMMANDS[name]
    return import_module(module if "." in module else f"broker.cli.{module}")


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from kafka_tools.version import groupbroker_version
        sys.stdout.write(f"groupbroker {groupbroker_version()}\n")
        parser.exit()


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``only``) the one command that was named."""
    parser = argparse.ArgumentParser(prog="groupbroker", description="A Kafka broker built around "
                                     "Kafka's consumer-group coordinator.")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in [only] if only else COMMANDS:
        command(name).add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    named = argv[0] if argv and argv[0] in COMMANDS else None
    args = _parser(named).parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return command(args.command).run(args)


if __name__ == "__main__":
    sys.exit(main())
