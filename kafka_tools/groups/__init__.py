"""``groupbroker groups``: kafka-consumer-groups.sh and kafka-share-groups.sh over the Kafka
protocol, in their own syntax.

``groupbroker groups --bootstrap-server H:P --describe --group G`` takes Kafka's consumer tool's
options and prints its tables and messages, so scripts written for Kafka's tool run unchanged;
the older ``groupbroker groups describe G`` subcommands still work. ``groupbroker groups --share
...`` is kafka-share-groups.sh. Each syntax parses into one
:class:`~kafka_tools.groups.options.Options`, run by its tool's commands. It talks to any Kafka
broker (ours or Apache Kafka) with a blocking socket and our codec, and never imports trio.
"""

from __future__ import annotations

import argparse
import sys

from kafka_tools.version import groupbroker_version

from kafka_client.admin import (Cluster, Connection, GroupsError, KafkaError, describe_group, fetch_offsets,
                                find_coordinator, list_offsets, parse_address)
from . import share_commands, share_options
from .commands import COMMANDS
from .options import HELP, Options, UsageError, parse
from .render import Output

SHARE_FLAG = "--share"

__all__ = ["Cluster", "Connection", "GroupsError", "KafkaError", "add_parser", "describe_group",
           "fetch_offsets", "find_coordinator", "list_offsets", "parse_address", "run"]


def add_parser(commands) -> None:
    """The ``groups`` subcommand under ``commands``; it reads its own arguments (see HELP)."""
    groups = commands.add_parser(
        "groups", add_help=False, prefix_chars="\0",
        help="list, describe, delete consumer groups and reset or delete their offsets, over the "
             "wire, with kafka-consumer-groups.sh's options (--share: share groups, with "
             "kafka-share-groups.sh's)")
    groups.add_argument("groups_argv", nargs=argparse.REMAINDER)


def run(args) -> int:
    """Run one ``groups`` command line (``args.groups_argv``); the process's exit code."""
    argv = list(args.groups_argv)
    share = SHARE_FLAG in argv
    if share:
        argv.remove(SHARE_FLAG)
    help_text, commands = (share_options.HELP, share_commands.COMMANDS) if share else (HELP, COMMANDS)
    try:
        opts = share_options.parse_share(argv) if share else parse(argv)
    except UsageError as e:
        return _usage(str(e), help_text)
    if opts.action == "version":
        sys.stdout.write(f"{groupbroker_version()}\n")
        return 0
    out = Output(opts.legacy)
    try:
        cluster = Cluster(Connection(*parse_address(opts.bootstrap_server),
                                     timeout=opts.timeout_ms / 1000))
    except GroupsError as e:
        return _failed(out, opts, e)
    try:
        return commands[opts.action](cluster, opts, out)
    except UsageError as e:
        return _failed(out, opts, e) if opts.legacy else _usage(str(e), help_text)
    except GroupsError as e:
        return _failed(out, opts, e)
    finally:
        cluster.close()


def _usage(message: str, help_text: str) -> int:
    """CommandLineUtils.printUsageAndExit: the message and the help on stderr, exit 1."""
    sys.stderr.write(f"{message}\n{help_text}")
    return 1


def _failed(out: Output, opts: Options, error: Exception) -> int:
    """Kafka's tool prints 'Executing consumer group command failed due to ...' and exits 0;
    the older syntax prints 'Error: ...' on stderr and exits 1."""
    if out.legacy:
        out.error(str(error))
        return 1
    out.error(f"Executing {'share' if opts.share else 'consumer'} group command failed due to {error}")
    if opts.share and getattr(error, "thrown", None):
        out.stderr(error.thrown)              # ShareGroupCommand.printError prints the exception
    return 0


