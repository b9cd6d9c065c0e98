"""The accept loop, which keeps the broker serving when file descriptors run out.

At the descriptor limit accept(2) fails with EMFILE/ENFILE while the new connection waits in
the listen backlog, where its client would only time out. So one descriptor is held in reserve:
when accept fails for lack of descriptors, the reserve is let go, the waiting connection is
accepted and closed at once (its client sees the refusal promptly), and the reserve is taken
again. Existing connections carry on throughout; the condition is logged once when it starts
and once when it ends. Without a reserve (someone else took the freed descriptor) the loop
backs off briefly instead of spinning.
"""

from __future__ import annotations

import errno
import logging
import os
from collections import Counter, deque

import trio

from security.limits import UNLIMITED, ConnectionLimitSettings

log = logging.getLogger("groupbroker.server")

#: accept(2) failures that mean "no resources now", not "this listener is broken".
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
#: How long to wait before accepting again when no descriptor can be freed.
BACKOFF_S = 0.1


class ConnectionQuotas:
    """One node's connections against Kafka's limits, as its ConnectionQuotas keeps them: at
    max.connections (the node's, or a listener's) or the connection creation rate, the node
    accepts nothing more until a connection closes or the rate allows (new connections wait in
    the listen backlog); a connection over max.connections.per.ip for its address is accepted
    and closed at once."""

    def __init__(self, settings: ConnectionLimitSettings):
        self.settings = settings
        self.total = 0
        self.by_listener: Counter[str] = Counter()
        self.by_address: Counter[str] = Counter()
        self._freed = trio.Event()
        self._created: dict[str | None, deque[float]] = {}      # creation times in the last second
        self._waiting = False

    async def slot(self, listener: str) -> None:
        """Wait until ``listener`` may accept one more connection."""
        most, rate = self.settings.listener(listener)
        while self.total >= self.settings.max_connections or self.by_listener[listener] >= most:
            self._log_wait(f"max.connections reached on listener {listener}: new connections wait until "
                           f"one closes")
            self._freed = trio.Event() if self._freed.is_set() else self._freed
            await self._freed.wait()
        for key, limit in ((None, self.settings.max_connection_creation_rate), (listener, rate)):
            if limit < UNLIMITED:
                await self._pace(key, limit)
        if self._waiting:
            self._waiting = False
            log.info("accepting connections on listener %s again", listener)

    async def _pace(self, key: str | None, per_second: int) -> None:
        created = self._created.setdefault(key, deque())
        while True:
            now = trio.current_time()
            while created and created[0] <= now - 1:
                created.popleft()
            if len(created) < per_second:
                created.append(now)
                return
            self._log_wait(f"max.connection.creation.rate={per_second} reached"
                           f"{'' if key is None else ' on listener ' + key}: new connections are throttled")
            await trio.sleep_until(created[0] + 1)

    def _log_wait(self, why: str) -> None:
        if not self._waiting:
            self._waiting = True
            log.warning("%s", why)

    def admit(self, address: str, listener: str) -> bool:
        limit = self.settings.ip_limit(address)
        if self.by_address[address] >= limit:
            log.info("Rejected connection from %s, address already has the configured maximum of %d connections.",
                     address, limit)
            return False
        self.total += 1
        self.by_listener[listener] += 1
        self.by_address[address] += 1
        return True

    def release(self, address: str, listener: str) -> None:
        self.total -= 1
        self.by_listener[listener] -= 1
        self.by_address[address] -= 1
        self._freed.set()


class Acceptor:
    """Accepts on every listener, handing each connection to its listener's handler in ``nursery``."""

    def __init__(self, nursery: trio.Nursery, quotas: ConnectionQuotas):
        self.nursery, self.quotas = nursery, quotas
        self.refused = 0                     # connections closed unserved for lack of descriptors
        self._starved = False
        self._refused_before = 0             # self.refused when the descriptors ran out
        self._reserve: int | None = _take_reserve()

    async def serve(self, listeners: list[tuple[trio.SocketListener, str, object]]) -> None:
        """``listeners``: each with its listener's name and the handler of its connections."""
        try:
            async with trio.open_nursery() as accepting:
                for listener, name, handler in listeners:
                    accepting.start_soon(self._accept_forever, listener, name, handler)
        finally:
            if self._reserve is not None:
                os.close(self._reserve)
                self._reserve = None

    async def _accept_forever(self, listener: trio.SocketListener, name: str, handler) -> None:
        async with listener:
            waiting = False                  # a connection is known to wait in the backlog
            while True:
                await self.quotas.slot(name)
                try:
                    stream = await listener.accept()
                except OSError as e:
                    if e.errno not in OUT_OF_RESOURCES:
                        raise
                    # Linux fails accept(2) for want of a descriptor even with nobody waiting,
                    # so first wait for a connection, then try once more before refusing it.
                    if waiting:
                        await self._refuse_one(listener)
                    else:
                        self._note_starved(e)
                        await trio.lowlevel.wait_readable(listener.socket)
                    waiting = not waiting
                    continue
                waiting = False
                if self._starved:
                    self._starved = False
                    log.warning("accepting connections again; %d refused while out of file descriptors",
                                self.refused - self._refused_before)
                address = _address(stream)
                if self.quotas.admit(address, name):
                    self.nursery.start_soon(self._serve_one, handler, stream, address, name)
                else:
                    stream.socket.close()

    async def _serve_one(self, handler, stream, address: str, listener: str) -> None:
        try:
            await handler(stream)
        finally:
            self.quotas.release(address, listener)

    def _note_starved(self, error: OSError) -> None:
        if not self._starved:
            self._starved, self._refused_before = True, self.refused
            log.warning("cannot accept connections (%s): refusing new ones until descriptors free "
                        "up; existing connections carry on", os.strerror(error.errno))

    async def _refuse_one(self, listener: trio.SocketListener) -> None:
        """Accept the waiting connection with the reserve descriptor and close it at once."""
        if self._reserve is None:
            self._reserve = _take_reserve()
            await trio.sleep(BACKOFF_S)
            return
        os.close(self._reserve)
        self._reserve = None
        try:
            stream = await listener.accept()
        except OSError as e:
            if e.errno not in OUT_OF_RESOURCES:
                raise
            await trio.sleep(BACKOFF_S)         # the freed descriptor went elsewhere
        else:
            stream.socket.close()
            self.refused += 1
        self._reserve = _take_reserve()


def _address(stream: trio.SocketStream) -> str:
    try:
        return stream.socket.getpeername()[0]
    except OSError:
        return "unknown"


def _take_reserve() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
