"""``groupbroker groups``: kafka-consumer-groups.sh, kafka-share-groups.sh and
kafka-streams-groups.sh over the Kafka protocol, in their own syntax.

``groupbroker groups --bootstrap-server H:P --describe --group G`` takes Kafka's consumer tool's
options and prints its tables and messages, so scripts written for Kafka's tool run unchanged;
the older ``groupbroker groups describe G`` subcommands still work. ``groupbroker groups --share
...`` is kafka-share-groups.sh, ``groupbroker groups --streams ...`` kafka-streams-groups.sh. Each
syntax parses into one
:class:`~kafka_tools.groups.options.Options`, run by its tool's commands. It talks to any Kafka
broker (ours or Apache Kafka) with a blocking socket and our codec, and never imports trio.
"""

from __future__ import annotations

import argparse
import sys

from kafka_tools.version import groupbroker_version

from kafka_client.admin import (Cluster, Connection, GroupsError, KafkaError, describe_group, fetch_offsets,
                                find_coordinator, list_offsets, parse_address)
from . import share_commands, share_options, streams_commands, streams_options
from .commands import COMMANDS
from .options import HELP, Options, UsageError, parse
from .render import Output

SHARE_FLAG, STREAMS_FLAG = "--share", "--streams"

__all__ = ["Cluster", "Connection", "GroupsError", "KafkaError", "add_parser", "describe_group",
           "fetch_offsets", "find_coordinator", "list_offsets", "parse_address", "run"]


def add_parser(commands) -> None:
    """The ``groups`` subcommand under ``commands``; it reads its own arguments (see HELP)."""
    groups = commands.add_parser(
        "groups", add_help=False, prefix_chars="\0",
        help="list, describe, delete consumer groups and reset or delete their offsets, over the "
             "wire, with kafka-consumer-groups.sh's options (--share: share groups, with "
             "kafka-share-groups.sh's; --streams: streams groups, with kafka-streams-groups.sh's)")
    groups.add_argument("groups_argv", nargs=argparse.REMAINDER)


def run(args) -> int:
    """Run one ``groups`` command line (``args.groups_argv``); the process's exit code."""
    argv = list(args.groups_argv)
    tool = next((flag for flag in (SHARE_FLAG, STREAMS_FLAG) if flag in argv), None)
    if tool is not None:
        argv.remove(tool)
    help_text, commands, parser = {
        SHARE_FLAG: (share_options.HELP, share_commands.COMMANDS, share_options.parse_share),
        STREAMS_FLAG: (streams_options.HELP, streams_commands.COMMANDS, streams_options.parse_streams),
    }.get(tool, (HELP, COMMANDS, parse))
    try:
        opts = parser(argv)
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
    """Kafka's tool prints 'Executing consumer group command failed due to ...' and exits 0
    (the streams tool exits 1); the older syntax prints 'Error: ...' on stderr and exits 1."""
    if out.legacy:
        out.error(str(error))
        return 1
    kind = "share" if opts.share else "streams" if opts.streams else "consumer"
    out.error(f"Executing {kind} group command failed due to {error}")
    if (opts.share or opts.streams) and getattr(error, "thrown", None):
        out.stderr(error.thrown)              # their printError prints the exception
    return 1 if opts.streams else 0


