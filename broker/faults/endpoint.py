"""The admin endpoint: fault injection for a broker running in another process.

A second TCP listener (``--admin-port``, bound to 127.0.0.1 unless told otherwise) speaking
JSON lines: each request line is ``{"op": NAME, "args": {...}}`` and each answer line is
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "why"}``. The operations are those
of :class:`broker.faults.control.BrokerControl`; ``groupbroker faults`` is the client.

The endpoint can fail any group's requests and take shards away, so every request carries a
secret, ``"token"``: as Jupyter does, the broker writes a fresh random token at each start to
``<data dir>/admin.token``, readable only by the user it runs as. A request without the right
token is refused and its connection closed.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import secrets

import trio

from coordinator.interventions import InterventionError
from log_store.files import atomic_write

from broker.faults.control import BrokerControl
from broker.faults.rules import FaultError

log = logging.getLogger("groupbroker.admin")

#: The longest request line accepted.
MAX_LINE = 64 * 1024


#: The token file's name in the data dir.
TOKEN_FILE = "admin.token"


def write_token(data_dir: str) -> str:
    """A new random token in ``<data_dir>/admin.token`` (mode 0600, replacing any old one)."""
    token = secrets.token_urlsafe(32)
    os.makedirs(data_dir, exist_ok=True)
    atomic_write(os.path.join(data_dir, TOKEN_FILE), token + "\n", durable=False, mode=0o600)
    return token


async def serve_admin(control: BrokerControl, host: str, port: int, data_dir: str, *,
                      task_status=trio.TASK_STATUS_IGNORED) -> None:
    token = await trio.to_thread.run_sync(write_token, data_dir)
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    log.info("admin endpoint listening on %s:%d (token in %s)", host, bound,
             os.path.join(data_dir, TOKEN_FILE))
    if not _loopback(host):
        log.warning("THE FAULT-INJECTION ADMIN ENDPOINT IS REACHABLE FROM OTHER MACHINES on %s:%d: "
                    "anyone holding the token can fail any group's requests; bind it to 127.0.0.1 "
                    "unless you mean it", host, bound)
    task_status.started(bound)
    await trio.serve_listeners(lambda stream: _session(control, stream, token), listeners)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _session(control: BrokerControl, stream: trio.SocketStream, token: str) -> None:
    buffer = b""
    try:
        async with stream:
            while True:
                while b"\n" not in buffer:
                    data = await stream.receive_some(MAX_LINE)
                    if not data:
                        return
                    buffer += data
                    if len(buffer) > MAX_LINE:
                        await stream.send_all(_line({"ok": False, "error": "request line too long"}))
                        return
                line, buffer = buffer.split(b"\n", 1)
                answer = await _answer(control, line, token)
                await stream.send_all(_line(answer))
                if answer.get("error") == UNAUTHORIZED:
                    log.warning("admin endpoint: refused a request without the right token from %s",
                                _peer(stream))
                    return
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    except Exception:                              # a bug must not take the listener down
        log.exception("admin session failed")


#: The answer to a request whose token is missing or wrong.
UNAUTHORIZED = "unauthorized: the request's token does not match the broker's admin.token"


async def _answer(control: BrokerControl, line: bytes, token: str) -> dict:
    try:
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("args", {}), dict):
            raise FaultError('expected {"op": NAME, "args": {...}, "token": TOKEN}')
        if not hmac.compare_digest(str(request.get("token", "")).encode(), token.encode()):
            return {"ok": False, "error": UNAUTHORIZED}
        return {"ok": True, "result": await control.execute(str(request.get("op")), **request.get("args", {}))}
    except (ValueError, InterventionError) as e:      # FaultError and bad JSON are ValueErrors
        return {"ok": False, "error": str(e)}


def _line(answer: dict) -> bytes:
    return json.dumps(answer).encode() + b"\n"


def _peer(stream: trio.SocketStream) -> str:
    try:
        return "%s:%s" % stream.socket.getpeername()[:2]
    except OSError:
        return "unknown peer"
