"""A connection's answers on their way out: in request order, each once the records it
depends on are written (and flushed, if the policy says so), those ready together in one write."""

from __future__ import annotations

import logging
import os
from typing import NamedTuple

import trio

from coordinator.responses import error_response
from protocol.errors import ErrorCode
from protocol.exceptions import EncodeError
from protocol.header import encode_response_parts

log = logging.getLogger("groupbroker.server")

#: Answers decided but not yet sent, per connection (then the reader waits).
_IN_FLIGHT = 32


def encoded(header, response) -> list:
    """The framed response chunks for one request (none for acks=0 produce)."""
    if response is None:
        return []
    try:
        return encode_response_parts(header.api_key, header.api_version, header.correlation_id, response)
    except EncodeError:
        log.exception("cannot encode the answer to api %d v%d", header.api_key, header.api_version)
        raise


class Answer(NamedTuple):
    """One request's answer on its way out: the shard tickets that must be released (their
    records written, and flushed if the policy says so) before it is sent, its framed chunks,
    and the request (to answer it otherwise if they never are)."""
    barriers: list
    parts: list
    header: object
    body: object

    def refused(self) -> list:
        """What a group answer whose records were never written or flushed turns into: Kafka's
        NOT_COORDINATOR (the client looks for the coordinator again)."""
        h = self.header
        return encoded(h, error_response(h.api_key, h.api_version, self.body, ErrorCode.NOT_COORDINATOR))


class OrderedSender:
    """Sends a connection's answers in request order, each once its tickets are released.

    Answers that are already released, with nothing queued ahead of them, go out from the
    reader at once; the others queue for the background task, which alone sends while any
    are queued (so the two never write at the same time). Either way, answers ready together
    leave in one write.
    """

    def __init__(self, stream: trio.SocketStream, on_sent=lambda: None):
        self.stream, self.on_sent = stream, on_sent
        self.queue, self._queued = trio.open_memory_channel(_IN_FLIGHT)
        self._pending = 0                       # answers queued or being sent by run()
        self._drained = trio.Event()            # set while none is
        self._drained.set()

    async def submit(self, answers: list[Answer]) -> None:
        """Send answers, in order, each once its tickets are released."""
        if self._pending == 0 and all(t.released for a in answers for t in a.barriers):
            await self._send(answers)
            return
        if self._drained.is_set():
            self._drained = trio.Event()
        for answer in answers:
            self._pending += 1
            try:
                self.queue.send_nowait(answer)
            except trio.WouldBlock:
                await self.queue.send(answer)

    async def drained(self) -> None:
        """Return once every answer submitted has been sent."""
        await self._drained.wait()

    async def run(self) -> None:
        async with self._queued:
            async for answer in self._queued:
                answers = [answer]
                while True:
                    try:
                        answers.append(self._queued.receive_nowait())
                    except trio.WouldBlock:
                        break
                await self._send(answers)
                self._pending -= len(answers)
                if self._pending == 0:
                    self._drained.set()

    async def _send(self, answers: list[Answer]) -> None:
        chunks = []
        for answer in answers:
            written = True
            for ticket in answer.barriers:
                written = (not ticket.failed if ticket.released else await ticket.wait_released()) and written
            # Never acknowledge a failed write: as Kafka maps one, the client gets
            # NOT_COORDINATOR and looks for the coordinator again.
            chunks += answer.parts if written else answer.refused()
        for chunk in _coalesce(chunks):
            await _write(self.stream, chunk)
        self.on_sent()


async def _write(stream: trio.SocketStream, data: bytes) -> None:
    """Send ``data``: straight into the socket when it has room (no trip through trio's
    scheduler, which costs more than the write), the rest through trio (all of it for TLS)."""
    if isinstance(stream, trio.SSLStream):
        await stream.send_all(data)
        return
    try:
        sent = os.write(stream.socket.fileno(), data)
    except BlockingIOError:
        sent = 0
    except OSError as e:                      # reset, broken pipe: the client went away
        raise trio.BrokenResourceError(str(e)) from e
    if sent < len(data):
        await stream.send_all(memoryview(data)[sent:])


#: Response parts at least this large (record data) are sent as they are, not copied.
_LARGE = 64 * 1024


def _coalesce(parts) -> list:
    """Join the small pieces of responses so they go out in as few sends as possible."""
    out, small = [], []
    for part in parts:
        if len(part) >= _LARGE:
            if small:
                out.append(b"".join(small))
                small = []
            out.append(part)
        else:
            small.append(part)
    if small:
        out.append(b"".join(small))
    return out
