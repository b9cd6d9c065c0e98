"""The admin endpoint: fault injection for a broker running in another process.

A second TCP listener (``--admin-port``, bound to 127.0.0.1 unless told otherwise) speaking
JSON lines: each request line is ``{"op": NAME, "args": {...}}`` and each answer line is
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "why"}``. The operations are those
of :class:`broker.control.BrokerControl`; ``groupbroker faults`` is the client.
"""

from __future__ import annotations

import json
import logging

import trio

from coordinator.interventions import InterventionError

from .control import BrokerControl
from .faults import FaultError

log = logging.getLogger("groupbroker.admin")

#: The longest request line accepted.
MAX_LINE = 64 * 1024


async def serve_admin(control: BrokerControl, host: str, port: int, *,
                      task_status=trio.TASK_STATUS_IGNORED) -> None:
    listeners = await trio.open_tcp_listeners(port, host=host)
    bound = listeners[0].socket.getsockname()[1]
    log.info("admin endpoint listening on %s:%d", host, bound)
    task_status.started(bound)
    await trio.serve_listeners(lambda stream: _session(control, stream), listeners)


async def _session(control: BrokerControl, stream: trio.SocketStream) -> None:
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
                await stream.send_all(_line(await _answer(control, line)))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    except Exception:                              # a bug must not take the listener down
        log.exception("admin session failed")


async def _answer(control: BrokerControl, line: bytes) -> dict:
    try:
        request = json.loads(line)
        if not isinstance(request, dict) or not isinstance(request.get("args", {}), dict):
            raise FaultError('expected {"op": NAME, "args": {...}}')
        return {"ok": True, "result": await control.execute(str(request.get("op")), **request.get("args", {}))}
    except (ValueError, InterventionError) as e:      # FaultError and bad JSON are ValueErrors
        return {"ok": False, "error": str(e)}


def _line(answer: dict) -> bytes:
    return json.dumps(answer).encode() + b"\n"
