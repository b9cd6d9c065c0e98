"""``groupbroker faults``: fault injection for a broker started with ``--admin-port``.

``groupbroker faults [--admin HOST:PORT] [--data-dir D | --token-file F] OP [key=value ...]``,
e.g. ``groupbroker faults fail api=Heartbeat error=REBALANCE_IN_PROGRESS count=3``. Values are
read as JSON when they parse (numbers, true/false, null), else as strings. The token comes
from the broker's ``admin.token`` file (in its data dir) or ``$GROUPBROKER_ADMIN_TOKEN``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys

from broker.faults.control import ControlProxy, operations


class AdminError(Exception):
    """The admin endpoint refused an operation or could not be reached."""


class AdminClient:
    """A blocking client of the admin endpoint (one JSON line each way per operation)."""

    def __init__(self, address: str, token: str, timeout_s: float = 30.0):
        self.token = token
        host, _, port = address.rpartition(":")
        try:
            self._sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s)
        except (OSError, ValueError) as e:
            raise AdminError(f"cannot reach the admin endpoint at {address}: {e}") from None
        self._file = self._sock.makefile("rb")
        self.faults = ControlProxy(self.call)

    def call(self, op: str, arguments: dict):
        self._sock.sendall(json.dumps({"op": op, "args": arguments, "token": self.token}).encode() + b"\n")
        line = self._file.readline()
        if not line:
            raise AdminError("the admin endpoint closed the connection")
        answer = json.loads(line)
        if not answer["ok"]:
            raise AdminError(answer["error"])
        return answer["result"]

    def close(self) -> None:
        self._file.close()
        self._sock.close()


def add_parser(commands) -> None:
    ops = "\n".join(f"  {name:<20} {doc}" for name, doc in sorted(operations().items()))
    faults = commands.add_parser(
        "faults", help="inject faults into a running broker (started with --admin-port)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"operations:\n{ops}\n\nexample: groupbroker faults fail api=Heartbeat "
               "error=REBALANCE_IN_PROGRESS count=3 group=my-group")
    faults.add_argument("--admin", default="127.0.0.1:9093", metavar="HOST:PORT",
                        help="the broker's admin endpoint (default 127.0.0.1:9093)")
    faults.add_argument("--data-dir", default="./groupbroker-data",
                        help="the broker's data dir, which holds its admin.token (default ./groupbroker-data)")
    faults.add_argument("--token-file", help="the token file to use instead of DATA_DIR/admin.token")
    faults.add_argument("op", choices=sorted(operations()), metavar="OP")
    faults.add_argument("arguments", nargs="*", metavar="KEY=VALUE")


def run(args) -> int:
    """Run one operation and print its result (as JSON when it is not a plain string)."""
    try:
        arguments = dict(_argument(a) for a in args.arguments)
        client = AdminClient(args.admin, read_token(args.token_file or os.path.join(args.data_dir, "admin.token")))
        try:
            result = client.call(args.op, arguments)
        finally:
            client.close()
    except AdminError as e:
        sys.stderr.write(f"groupbroker faults {args.op}: {e}\n")
        return 1
    sys.stdout.write((result if isinstance(result, str) else json.dumps(result, indent=1)) + "\n")
    return 0


def read_token(path: str) -> str:
    """$GROUPBROKER_ADMIN_TOKEN, else the token the broker wrote to ``path`` at its start."""
    token = os.environ.get("GROUPBROKER_ADMIN_TOKEN")
    if token:
        return token
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError as e:
        raise AdminError(f"cannot read the admin token ({e}); pass the broker's --data-dir or "
                         "--token-file, or set GROUPBROKER_ADMIN_TOKEN") from None


def _argument(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise AdminError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.replace("-", "_"), json.loads(value)
    except ValueError:
        return key.replace("-", "_"), value
