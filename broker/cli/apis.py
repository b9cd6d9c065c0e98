"""``groupbroker apis``: the APIs and versions the broker serves, exactly what ApiVersions says."""

from __future__ import annotations

import sys

from protocol.registry import describe


def add_parser(commands) -> None:
    commands.add_parser("apis", help="print the Kafka APIs and versions this broker serves (what "
                                     "ApiVersions advertises)")


def run(args) -> int:
    from broker.dispatch.served import SERVED_APIS
    sys.stdout.write(describe(SERVED_APIS) + "\n")
    return 0
