"""``groupbroker faults``: fault injection for a broker started with ``--admin-port``.

``groupbroker faults [--admin HOST:PORT] [--data-dir D | --token-file F] OP [VALUE ...] [key=value ...]``,
e.g. ``groupbroker faults fail api=Heartbeat error=REBALANCE_IN_PROGRESS count=3`` or
``groupbroker faults fence-member my-group MEMBER_ID``: plain values fill the operation's
parameters in order, ``key=value`` names one (a word is ``key=value`` only when ``key`` is one
of the operation's parameters, so a group id may hold ``=``). Values of text parameters (group,
member, instance, client_id) are taken as written; others are read as JSON when they parse
(numbers, true/false, null), else as strings. The token comes from the broker's
``admin.token`` file (in its data dir) or ``$GROUPBROKER_ADMIN_TOKEN``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import socket
import sys
import textwrap

from broker.faults.control import ControlProxy, operations, parameters


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


def usage(op: str) -> str:
    """``fence-member GROUP MEMBER``, ``fail API ERROR [count=1] [group=null] ...``."""
    words = [op]
    for p in parameters(op).parameters.values():
        if p.default is inspect.Parameter.empty:
            words.append(p.name.upper())
        else:
            words.append(f"[{p.name}={json.dumps(p.default)}]")
    return " ".join(words)


def _help() -> str:
    entries = []
    for name, doc in sorted(operations().items()):
        entries.append(f"  {usage(name)}")
        entries += textwrap.wrap(doc, 92, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(entries)


def add_parser(commands) -> None:
    faults = commands.add_parser(
        "faults", help="inject faults into a running broker (started with --admin-port)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"operations:\n{_help()}\n\nexamples:\n"
               "  groupbroker faults fail api=Heartbeat error=REBALANCE_IN_PROGRESS count=3 group=my-group\n"
               "  groupbroker faults fence-member my-group MEMBER_ID")
    faults.add_argument("--admin", default="127.0.0.1:9093", metavar="HOST:PORT",
                        help="the broker's admin endpoint (default 127.0.0.1:9093)")
    faults.add_argument("--data-dir", default="./groupbroker-data",
                        help="the broker's data dir, which holds its admin.token (default ./groupbroker-data)")
    faults.add_argument("--token-file", help="the token file to use instead of DATA_DIR/admin.token")
    faults.add_argument("op", choices=sorted(operations()), metavar="OP")
    faults.add_argument("arguments", nargs="*", metavar="VALUE|KEY=VALUE")


def run(args) -> int:
    """Run one operation and print its result (as JSON when it is not a plain string)."""
    try:
        arguments = bind(args.op, args.arguments)
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


#: Parameters whose values are text as written (a group named ``123`` stays a string).
_TEXT = ("str", "str | None")


def bind(op: str, words: list[str]) -> dict[str, object]:
    """The named arguments of ``op`` from command-line words (see the module docstring)."""
    signature = parameters(op)
    params = signature.parameters
    positional, named = [], {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.replace("-", "_")
        if sep and key in params:
            if key in named:
                raise AdminError(f"{op}: {key} given twice")
            named[key] = value
        elif named:
            why = f"no parameter {key!r}" if sep else "a plain value after key=value arguments"
            raise AdminError(f"{op}: {word!r}: {why} (usage: {usage(op)})")
        else:
            positional.append(word)
    try:
        bound = signature.bind(*positional, **named).arguments
    except TypeError as e:
        raise AdminError(f"{op}: {e} (usage: {usage(op)})") from None
    return {name: _value(value, params[name].annotation) for name, value in bound.items()}


def _value(text: str, annotation) -> object:
    if annotation in _TEXT:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
