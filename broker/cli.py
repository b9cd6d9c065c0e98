"""The ``groupbroker`` command line."""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.metadata import PackageNotFoundError, version

from protocol.registry import describe


def _version() -> str:
    try:
        return version("groupbroker")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupbroker", description=__doc__)
    parser.add_argument("--version", action="version", version=f"groupbroker {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("apis", help="print the Kafka APIs and versions this build speaks")
    serve = commands.add_parser("serve", help="run the broker")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=9092)
    serve.add_argument("--data-dir", default="./groupbroker-data")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "apis":
        sys.stdout.write(describe() + "\n")
        return 0
    logging.getLogger("groupbroker").error(
        "the network server is not built yet (issue #4); this build provides the protocol codec only")
    return 2


if __name__ == "__main__":
    sys.exit(main())
