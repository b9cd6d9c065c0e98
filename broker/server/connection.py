"""One client connection: TLS, framing, the SASL gate, requests decided in order (those that
may be pipelined handed to their shards together), answers sent in order by its sender.

A connection reads the next request only once the one before it is decided, so a parked
JoinGroup holds the requests behind it, as Kafka's muted channels do. Bad input (a malformed or
oversized frame, an unknown API or version) closes only this connection, with one log line; so
does silence (no bytes either way) for ``connections.max.idle.ms``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable

import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError, EncodeError, FrameTooLarge, UnsupportedVersion
from protocol.header import decode_request, decode_request_header
from protocol.logtext import safe
from protocol.parse_checks import parse_failure
from security.sasl.session import SaslSession, Step
from security.settings import SettingsError
from security.setup import ListenerSecurity
from security.tls import ANONYMOUS, client_principal

from broker.api_spec import Runs
from broker.config import BrokerConfig
from broker.dispatch.api_versions import unsupported_version_answer
from broker.dispatch.handlers import Call, Handlers
from broker.dispatch.served import API_SPECS, whole_request_error
from broker.faults.rules import ConnectionDropped, Faults
from broker.group_runtime.shard_runner import ShardRunner
from broker.server.inbound import Inbound
from broker.server.sasl_gate import gate
from broker.server.sender import Answer, OrderedSender, encoded

log = logging.getLogger("groupbroker.server")

#: An ApiVersions request at a version this broker does not know.
UNKNOWN_API_VERSIONS = object()
#: How long a connection closed after its last answer waits for its client to hang up first.
_LINGER_S = 0.5
#: Pipelined requests answered together at most: fewer than a client keeps in flight, so it
#: sends its next requests while the rest of its batch is decided (32 in a batch of 32
#: leaves the two sides waiting in turn; 16 gave 40 % more heartbeats per second).
_BATCH = 16


class Connection:
    """``where`` tells the log which node and listener it came to (empty on a lone one);
    ``stopping()`` says whether the broker is shutting down."""

    def __init__(self, stream: trio.SocketStream, node_id: int, security: ListenerSecurity, *,
                 config: BrokerConfig, handlers: Handlers, faults: Faults, where: str,
                 stopping: Callable[[], bool]):
        self.stream, self.node_id, self.security = stream, node_id, security
        self.config, self.handlers, self.faults = config, handlers, faults
        self.peer, self.where, self.stopping = peer_of(stream), where, stopping
        #: cancelled when its node stops: the connection drops, as when a broker process dies
        self.dropped = trio.CancelScope()
        self._inbound: Inbound | None = None
        self._reader: trio.CancelScope | None = None

    async def serve(self) -> None:
        """Serve the connection until the client or the broker closes it."""
        stream, peer, security = self.stream, self.peer, self.security
        log.info("connection from %s opened%s", peer, self.where)
        try:
            with self.dropped:
                principal = ANONYMOUS
                if security.tls is not None:
                    stream, principal = await self._tls_handshake(stream, security, peer)
                    if principal is None:
                        return
                inbound = Inbound(stream, self.config.socket_request_max_bytes)
                try:
                    async with trio.open_nursery() as nursery:
                        sender = OrderedSender(stream, inbound.touch)
                        nursery.start_soon(sender.run)
                        idle_watch = trio.CancelScope()
                        if self.config.connections_max_idle_ms >= 0:
                            nursery.start_soon(self._close_when_idle, inbound, peer, nursery.cancel_scope,
                                               idle_watch)
                        async with sender.queue:
                            self._inbound, self._reader = inbound, trio.CancelScope()
                            try:
                                with self._reader:            # cancelled at shutdown while idle
                                    await self._read_requests(inbound, sender, principal)
                            finally:
                                self._reader = None
                                idle_watch.cancel()
                except* (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass                                   # the client went away mid-answer
        except Exception:                              # a handler bug must not kill the server
            log.exception("closing connection from %s after an internal error", peer)
        finally:
            if self._inbound is not None:
                self._inbound.ended.set()
            with trio.move_on_after(1, shield=True):
                await stream.aclose()
            log.info("connection from %s closed", peer)

    def close_if_idle(self) -> None:
        """At shutdown: close now if waiting for the next request (a busy one finishes first)."""
        if self._reader is not None and self._inbound.idle:
            self._reader.cancel()

    async def _tls_handshake(self, stream: trio.SocketStream, security: ListenerSecurity, peer: str):
        """The TLS stream and the principal of its client certificate (ANONYMOUS without one);
        None for the principal if the handshake fails (logged), or does not end within
        connections.max.idle.ms."""
        tls = trio.SSLStream(stream, security.tls, server_side=True)
        idle_ms = self.config.connections_max_idle_ms
        with trio.move_on_after(idle_ms / 1000 if idle_ms >= 0 else math.inf):
            try:
                await tls.do_handshake()
            except trio.BrokenResourceError as e:
                log.warning("closing connection from %s: TLS handshake failed: %s", peer, safe(str(e.__cause__ or e)))
                return stream, None
            try:
                principal = client_principal(tls, security.principals)
            except SettingsError as e:        # no principal mapping rule applies: Kafka fails it
                log.warning("closing connection from %s: authentication failed: %s", peer, safe(str(e)))
                return tls, None
            if not security.sasl and self.faults.authentication and \
                    self.faults.take_authentication(principal, "") is not None:
                log.warning("closing connection from %s: authentication of %s refused by fault injection",
                            peer, safe(principal))
                return tls, None
            return tls, principal
        log.info("closing connection from %s: TLS handshake not completed within %d ms "
                 "(connections.max.idle.ms)", peer, idle_ms)
        return stream, None

    async def _close_when_idle(self, inbound: Inbound, peer: str, connection: trio.CancelScope,
                               watch: trio.CancelScope) -> None:
        """Kafka's idle expiry: close a connection with no bytes in or out for
        connections.max.idle.ms (a partial frame, or a request parked that long, included)."""
        idle_ms = self.config.connections_max_idle_ms
        with watch:
            while (deadline := inbound.last_active + idle_ms / 1000) > trio.current_time():
                await trio.sleep_until(deadline)
            log.info("closing connection from %s: idle for %d ms (connections.max.idle.ms)", peer, idle_ms)
            connection.cancel()

    async def _read_requests(self, inbound: Inbound, sender: OrderedSender, principal: str) -> None:
        """Decide each request in order; a request is read only once the one before it is
        decided (so a parked JoinGroup holds the rest), while answers wait for durability.

        Pipelined requests that never park (heartbeats, commits) are the exception: every one
        already buffered goes to its shard at once, and their answers leave together.

        On a SASL listener, the session decides what comes before authentication (and
        re-authentication); the principal is the one it authenticated.
        """
        security, frames = self.security, inbound.frames
        host, listener = "/" + self.peer.rsplit(":", 1)[0], security.listener.name
        session = security.new_session() if security.sasl else None
        if session is not None:
            frames.max_frame = min(frames.max_frame, security.sasl_max_receive)
        batch = _Pipelined(self, sender)
        try:
            while True:
                frame = frames.next_frame()
                if frame is None:
                    if batch:
                        await batch.answer()
                        continue
                    if inbound.closed_by_peer or self.stopping():
                        return
                    inbound.idle = True
                    await inbound.receive()
                    inbound.idle = False
                    continue
                if session is None:
                    header, body = self._decode(frame)
                else:
                    header, body, step = gate(session, frame, self._decode, UNKNOWN_API_VERSIONS, time.time() * 1000)
                    if step is not None:
                        await batch.answer()
                        ctx = header and Call(header.api_key, header.api_version, header.client_id or "", host,
                                              node_id=self.node_id, listener=listener)
                        if not await self._authentication_step(step, session, ctx, header, body, inbound, sender):
                            return
                        frames.max_frame = self.config.socket_request_max_bytes if session.authenticated \
                            else min(frames.max_frame, security.sasl_max_receive)
                        continue
                    principal = session.principal or principal
                ctx = Call(header.api_key, header.api_version, header.client_id or "", host,
                           until_closed=inbound.until_closed, node_id=self.node_id, listener=listener,
                           principal=principal, connection=inbound)
                began = self.handlers.begin(ctx, body)
                if began is not None and batch.add(header, ctx, body, began):
                    continue
                if batch:
                    await batch.answer()
                if began is None:
                    response = await self._respond(ctx, body)
                    await sender.submit([self._answer(header, ctx, body, response)])
        except (FrameTooLarge, DecodeError, UnsupportedVersion, ConnectionDropped) as e:
            if isinstance(e, FrameTooLarge) and session is not None and not session.authenticated:
                e = f"Failing SASL authentication due to invalid receive size ({e}: sasl.server.max.receive.size)"
            log.warning("closing connection from %s: %s", self.peer, safe(str(e)))
            await batch.answer()        # what came before the bad frame is answered, as Kafka would

    async def _authentication_step(self, step: Step, session: SaslSession, ctx: Call | None, header, body,
                                   inbound: Inbound, sender: OrderedSender) -> bool:
        """Carry out one step of a SASL exchange; False once the connection is to close. A
        failed authentication is answered (and closed) only after
        connection.failed.authentication.delay.ms, as Kafka holds it back. After an answer that
        ends the connection, the client gets a moment to hang up first: a client that reads the
        answer and the close in one go may drop the answer (kafka-python 3.0 does)."""
        if step.user is not None and self.faults.authentication and self.faults.take_authentication(
                session.principal, ctx.client_id if ctx else "") is not None:
            step = session.refuse(ctx.version if ctx else 0, "refused by fault injection")
        if step.delayed and self.config.connection_failed_authentication_delay_ms > 0:
            await trio.sleep(self.config.connection_failed_authentication_delay_ms / 1000)
        if step.response is not None:
            if header is None:                    # a bare token after a v0 handshake
                answer = Answer([], [len(step.response).to_bytes(4, "big") + step.response], None, None)
            else:
                answer = self._answer(header, ctx, body, step.response)
            await sender.submit([answer])
        if step.close is not None:
            log.warning("closing connection from %s: %s", self.peer, safe(step.close))
            if step.response is not None:
                with trio.move_on_after(_LINGER_S):
                    await sender.drained()
                    await inbound.until_closed()
            return False
        if step.user is not None:
            log.info("connection from %s authenticated as %s (%s)", self.peer, session.principal, session.mechanism)
        return True

    def _decode(self, frame: bytes):
        """The request's header and body; bad input raises (and closes the connection)."""
        try:
            request = decode_request(frame)
        except UnsupportedVersion as e:
            header = getattr(e, "header", None) or decode_request_header(frame)[0]
            if header.api_key != ApiKey.API_VERSIONS:
                raise UnsupportedVersion(f"api {header.api_key} v{header.api_version}: {e}") from None
            # Kafka answers an ApiVersions it cannot read with UNSUPPORTED_VERSION at v0
            return dataclasses.replace(header, api_version=0), UNKNOWN_API_VERSIONS
        except DecodeError as e:
            raise DecodeError(f"malformed request: {e}") from None
        header = request.header
        if not self.handlers.serves(header.api_key, header.api_version):
            raise UnsupportedVersion(f"api {header.api_key} v{header.api_version} is not served")
        if (why := parse_failure(header.api_key, header.api_version, request.body)) is not None:
            raise DecodeError(f"malformed request: {why}")
        return header, request.body

    async def _respond(self, ctx: Call, body):
        if body is UNKNOWN_API_VERSIONS:
            return unsupported_version_answer()
        return await self.handlers.handle(ctx, body)

    async def _finish(self, started: list) -> list:
        """Wait for the shards to decide pipelined requests; their answers, in order."""
        answers = []
        for header, ctx, body, ticket, complete in started:
            if ticket.decided:                 # as ShardRunner.answer, without a coroutine
                ctx.barriers.append(ticket)
                response = ticket.response
            else:
                response = await ShardRunner.answer(ticket, ctx.barriers)
            answers.append(self._answer(header, ctx, body, complete(response)))
        return answers

    def _answer(self, header, ctx: Call, body, response) -> Answer:
        return Answer(ctx.barriers, self._answered(header, ctx, body, response), header, body)

    def _answered(self, header, ctx: Call, body, response) -> list:
        """The answer's framed chunks; recorded first if the test asked for a recording."""
        if self.faults.recording and body is not UNKNOWN_API_VERSIONS:
            self.faults.record(ctx, body, response)
        try:
            return encoded(header, response)
        except EncodeError:
            if API_SPECS[header.api_key].runs is not Runs.DATA_PLANE:
                raise
            # a data-plane answer we cannot encode is a bug of ours: Kafka's UNKNOWN_SERVER_ERROR
            return encoded(header, whole_request_error(header.api_key, header.api_version, body,
                                                       ErrorCode.UNKNOWN_SERVER_ERROR))


class _Pipelined:
    """Pipelined requests handed to their shards, not yet answered: answered together, once
    no more are buffered, before any other request, or at :data:`_BATCH` of them."""

    def __init__(self, connection: Connection, sender: OrderedSender):
        self.connection, self.sender, self.started = connection, sender, []

    def __bool__(self) -> bool:
        return bool(self.started)

    def add(self, header, ctx: Call, body, began) -> bool:
        """Take one more; whether there is room for another."""
        self.started.append((header, ctx, body, *began))
        return len(self.started) < _BATCH

    async def answer(self) -> None:
        if self.started:
            started, self.started = self.started, []
            await self.sender.submit(await self.connection._finish(started))


def peer_of(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "unknown peer"
