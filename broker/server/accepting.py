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

import trio

log = logging.getLogger("groupbroker.server")

#: accept(2) failures that mean "no resources now", not "this listener is broken".
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
#: How long to wait before accepting again when no descriptor can be freed.
BACKOFF_S = 0.1


class Acceptor:
    """Accepts on every listener, handing each connection to its listener's handler in ``nursery``."""

    def __init__(self, nursery: trio.Nursery):
        self.nursery = nursery
        self.refused = 0                     # connections closed unserved for lack of descriptors
        self._starved = False
        self._refused_before = 0             # self.refused when the descriptors ran out
        self._reserve: int | None = _take_reserve()

    async def serve(self, listeners: list[tuple[trio.SocketListener, object]]) -> None:
        """``listeners``: each with the handler of its connections."""
        try:
            async with trio.open_nursery() as accepting:
                for listener, handler in listeners:
                    accepting.start_soon(self._accept_forever, listener, handler)
        finally:
            if self._reserve is not None:
                os.close(self._reserve)
                self._reserve = None

    async def _accept_forever(self, listener: trio.SocketListener, handler) -> None:
        async with listener:
            waiting = False                  # a connection is known to wait in the backlog
            while True:
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
                self.nursery.start_soon(handler, stream)

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


def _take_reserve() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
