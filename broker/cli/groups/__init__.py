"""``groupbroker groups``: kafka-consumer-groups.sh over the Kafka protocol, in its own syntax.

``groupbroker groups --bootstrap-server H:P --describe --group G`` takes Kafka's tool's options
and prints its tables and messages, so scripts written for Kafka's tool run unchanged; the older
``groupbroker groups describe G`` subcommands still work. Both parse into one
:class:`~broker.groups_cli.options.Options` run by the same commands. It talks to any Kafka
broker (ours or Apache Kafka) with a blocking socket and our codec, and never imports trio.
"""

from __future__ import annotations

import argparse
import sys

from broker.cli.version import groupbroker_version

from kafka_client.admin import (Cluster, Connection, GroupsError, KafkaError, describe_group, fetch_offsets,
                                find_coordinator, list_offsets, parse_address)
from .commands import COMMANDS
from .options import HELP, UsageError, parse
from .render import Output

__all__ = ["Cluster", "Connection", "GroupsError", "KafkaError", "add_parser", "describe_group",
           "fetch_offsets", "find_coordinator", "list_offsets", "parse_address", "run"]


def add_parser(commands) -> None:
    """The ``groups`` subcommand under ``commands``; it reads its own arguments (see HELP)."""
    groups = commands.add_parser(
        "groups", add_help=False, prefix_chars="\0",
        help="list, describe, delete consumer groups and reset or delete their offsets, over the "
             "wire, with kafka-consumer-groups.sh's options")
    groups.add_argument("groups_argv", nargs=argparse.REMAINDER)


def run(args) -> int:
    """Run one ``groups`` command line (``args.groups_argv``); the process's exit code."""
    try:
        opts = parse(args.groups_argv)
    except UsageError as e:
        return _usage(str(e))
    if opts.action == "version":
        sys.stdout.write(f"{groupbroker_version()}\n")
        return 0
    out = Output(opts.legacy)
    try:
        cluster = Cluster(Connection(*parse_address(opts.bootstrap_server),
                                     timeout=opts.timeout_ms / 1000))
    except GroupsError as e:
        return _failed(out, e)
    try:
        return COMMANDS[opts.action](cluster, opts, out)
    except UsageError as e:
        return _failed(out, e) if opts.legacy else _usage(str(e))
    except GroupsError as e:
        return _failed(out, e)
    finally:
        cluster.close()


def _usage(message: str) -> int:
    """CommandLineUtils.printUsageAndExit: the message and the help on stderr, exit 1."""
    sys.stderr.write(f"{message}\n{HELP}")
    return 1


def _failed(out: Output, error: Exception) -> int:
    """Kafka's tool prints 'Executing consumer group command failed due to ...' and exits 0;
    the older syntax prints 'Error: ...' on stderr and exits 1."""
    if out.legacy:
        out.error(str(error))
        return 1
    out.error(f"Executing consumer group command failed due to {error}")
    return 0


