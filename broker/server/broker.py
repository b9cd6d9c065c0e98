"""The trio TCP server: accept connections, read frames, answer requests strictly in order.

Structure (two nurseries, as hypercorn shuts down): shard tasks live in the
outermost nursery so they outlive every connection; connection handlers run in their own
nursery; the accept loop in an inner one. ``stop()`` closes the listeners and every
connection waiting for its next request, gives in-flight requests ``shutdown_grace_s`` to
finish, then stops the shards and flushes and closes the logs.

A connection reads the next request only once the one before it is decided, so a parked
JoinGroup holds the requests behind it, as Kafka's muted channels do; answers leave strictly in
request order, each once the records it depends on are written (and fsynced, if the flush
policy calls for it). Bad input (a malformed or
oversized frame, an unknown API or version) closes only that connection, with one log line; so
does silence (no bytes either way) for ``connections.max.idle.ms``. A parked Fetch ends when its
client hangs up. Running out of file descriptors refuses new connections promptly and keeps
serving the others (broker/server/accepting.py).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from functools import partial
from typing import NamedTuple

import trio

from coordinator.responses import error_response
from coordinator.shard import Shard
from offsets_log.errors import OffsetsLogError
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.exceptions import DecodeError, EncodeError, FrameTooLarge, UnsupportedVersion
from protocol.parse_checks import parse_failure
from protocol.header import decode_request, decode_request_header, encode_response_parts
from protocol.logtext import safe

from broker.api_spec import Runs
from broker.cluster.log_homes import log_home, open_log
from broker.cluster.topology import GROUP_TOPIC, Node, Topology
from security.listeners import Listener, for_node
from security.settings import SettingsError
from security.setup import ListenerSecurity, build_security
from security.tls import ANONYMOUS, client_principal
from broker.server.listen import bind_nodes
from broker.server.sasl_gate import gate
from broker.server.accepting import Acceptor, ConnectionQuotas
from broker.dispatch.api_versions import unsupported_version_answer
from broker.config import BrokerConfig
from broker.faults.control import BrokerControl
from broker.dispatch.served import API_SPECS, INJECTABLE_APIS, whole_request_error
from broker.faults.rules import ConnectionDropped, Faults
from broker.group_runtime.flusher import Flusher
from broker.group_runtime.router import GroupRouter
from broker.dispatch.handlers import Call, Handlers
from broker.server.inbound import Inbound
from broker.group_runtime.shard_runner import ShardRunner
from broker.txn_runtime.apis import TransactionApis
from broker.txn_runtime.service import TransactionService, group_partition, write_data_marker

log = logging.getLogger("groupbroker.server")


class Broker:
    """Everything one running broker owns: shards, topics, listeners."""

    def __init__(self, config: BrokerConfig, faults: Faults | None = None, security=None):
        self.config = config
        #: each listener's TLS and SASL (a bad setting raises SettingsError here)
        self.security: dict[str, ListenerSecurity] = security if security is not None else build_security(config)
        n = config.coordinator.offsets_topic_num_partitions
        self.journal = None
        if config.journal_enable:
            from broker.journal.recorder import BrokerJournal     # imported only when it is on
            self.journal = BrokerJournal(config)
        self.flusher = Flusher(config.flush_policy)
        if config.log_flush_interval_ms is not None and not config.flush_policy.periodic:
            log.warning("log.flush.interval.ms=%d flushes nothing unless log.flush.scheduler.interval.ms "
                        "is set too (its default is never), as in Kafka", config.log_flush_interval_ms)
        self.runners = [ShardRunner(Shard(i, config.coordinator, journal=self.journal is not None),
                                    partial(self._open_shard_log, i),
                                    journal=self.journal, flusher=self.flusher)
                        for i in range(n)]
        #: the nodes this process runs: node.id alone, or 0..N-1 for a cluster of N
        self.node_ids = [config.node_id] if config.nodes == 1 else list(range(config.nodes))
        self.topology: Topology | None = None      # once the nodes listen (their ports known)
        self.ports: dict[int, int] = {}            # each node's bound port (of its first listener)
        self.listener_ports: dict[int, dict[str, int]] = {}   # each node's, per listener name
        self._acceptors: dict[int, trio.CancelScope] = {}          # each running node's accept loop
        self._connections: dict[int, set[trio.CancelScope]] = {}   # each node's open connections
        self._quotas: dict[int, ConnectionQuotas] = {}              # each node's connection limits
        self._accepting: trio.Nursery | None = None
        self._connection_nursery: trio.Nursery | None = None
        self.handlers: Handlers | None = None
        self.transactions: TransactionService | None = None
        self.faults = faults or Faults(INJECTABLE_APIS)           # kept across restarts by EmbeddedBroker
        self.control = BrokerControl(self)
        self.port: int | None = None
        self.admin_port: int | None = None
        self._stop = trio.Event()
        self._stopping = False
        self._readers: dict[Inbound, trio.CancelScope] = {}   # each connection's request reader
        self._everything: trio.CancelScope | None = None
        self._crashed = False
        self.ready = trio.Event()          # set once every shard has loaded its log

    def stop(self, *, crash: bool = False) -> None:
        """Stop gracefully (answer what is in flight, flush the logs), or ``crash``: stop at
        once as a killed process would, answering nothing more and skipping the final fsync
        (what was acknowledged is on disk already)."""
        if crash and self._everything is not None:
            self._crashed = True
            self._everything.cancel()
        self._stop.set()

    async def _load_shards(self, nursery) -> None:
        """Shards load while we already accept (group APIs answer 14 meanwhile): one at a time
        in a worker thread, so that replaying logs never crowds out the event loop, and the
        smallest logs first, so that most groups are served soonest."""
        sizes = {runner: _log_bytes(log_home(self.config.data_dir, self.topology, GROUP_TOPIC, n))
                 for n, runner in enumerate(self.runners)}
        for runner in sorted(self.runners, key=sizes.__getitem__):
            # a shard whose log cannot be read answers NOT_COORDINATOR and retries by itself
            await nursery.start(runner.run)
        self.ready.set()
        log.info("all %d coordinator shards loaded", len(self.runners))

    async def serve(self, *, sockets=None, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until stopped: on ``sockets`` already listening (``groupbroker serve`` opens
        them early: one list per node), or on new listeners at the configured host and port
        (port P, P+1, ... for each node; 0: free ones)."""
        cfg = self.config
        async with trio.open_nursery() as shards:
            self._everything = shards.cancel_scope
            listeners = await self._listeners(sockets)
            self.topology = Topology(*self._endpoints())
            self.port = self.ports[self.node_ids[0]]
            shards.start_soon(self._load_shards, shards)
            shards.start_soon(self.flusher.run, self.runners)
            self.handlers = Handlers(cfg, self.topology, self._forget_topics, self.faults)
            for runner in self.runners:
                runner.metadata = self.handlers.data.store.metadata_image
                runner.group_configs = partial(self.handlers.data.config_apis.dynamic.scope, "groups")
            txn_partitions = cfg.transactions.transaction_state_log_num_partitions
            groups = GroupRouter(self.runners, self.topology, self.handlers.data.has_partition, txn_partitions,
                                 self.handlers.data.store.metadata_image)
            self.transactions = self._transaction_service()
            self.handlers.serve_coordinators(groups, TransactionApis(
                self.transactions, self.handlers.data.store.producer_ids.allocate,
                self.handlers.data.has_partition, partial(group_partition, offsets_partitions=len(self.runners)),
                self.topology))
            self.handlers.data.verify_transaction = groups.verify_transaction = self.transactions.verify
            self.handlers.data.cluster_admin.elect = self.control.cluster.move_leader
            shards.start_soon(self.transactions.run)
            shards.start_soon(self.handlers.data.retention_loop)
            if cfg.log_cleaner_enable:
                shards.start_soon(self.handlers.data.cleaner_loop)
            if self.journal is not None:
                shards.start_soon(self.journal.run, self.handlers.data.store)
            if cfg.admin_port is not None:
                from broker.faults.endpoint import serve_admin     # imported only when it is on
                self.admin_port = await shards.start(serve_admin, self.control, cfg.admin_host, cfg.admin_port,
                                                     cfg.data_dir)
            try:
                async with trio.open_nursery() as connections:
                    async with trio.open_nursery() as accepting:
                        self._accepting, self._connection_nursery = accepting, connections
                        for node_id, node_listeners in zip(self.node_ids, listeners):
                            self._accept(node_id, node_listeners)
                        self._log_listeners()
                        task_status.started(self)
                        await self._stop.wait()
                        log.info("shutting down: no new connections")
                        accepting.cancel_scope.cancel()
                        self._close_idle_connections()
                    connections.cancel_scope.deadline = trio.current_time() + cfg.shutdown_grace_s
            finally:
                shards.cancel_scope.cancel()
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self._close_logs)

    async def _listeners(self, sockets) -> list[list[tuple[Listener, list[trio.SocketListener]]]]:
        """Each node's listeners (node i's copy of each configured one) with their sockets;
        their bound ports noted in ``self.listener_ports`` and ``self.ports``."""
        if sockets is None:
            sockets = bind_nodes(self.config.listeners, len(self.node_ids))
        nodes = []
        for i, (node_id, groups) in enumerate(zip(self.node_ids, sockets)):
            ports = self.listener_ports[node_id] = {}
            nodes.append([])
            for listener, group in zip(self.config.listeners, groups):
                ports[listener.name] = group[0].getsockname()[1]
                nodes[-1].append((for_node(listener, i),
                                  [trio.SocketListener(trio.socket.from_stdlib_socket(s)) for s in group]))
            self.ports[node_id] = ports[self.config.listeners[0].name]
        return nodes

    def _endpoints(self) -> tuple[list[Node], dict[str, list[Node]]]:
        """What clients are told of each node, per listener: its advertised address, the bound
        port where none is advertised."""
        by_listener = {listener.name: [] for listener in self.config.listeners}
        for i, node_id in enumerate(self.node_ids):
            for listener in self.config.listeners:
                at = for_node(listener, i)
                port = at.advertised_port or self.listener_ports[node_id][listener.name]
                by_listener[listener.name].append(Node(node_id, at.advertised_host, port, self.config.rack_of(i)))
        return by_listener[self.config.listeners[0].name], by_listener

    def _log_listeners(self) -> None:
        if len(self.node_ids) > 1:
            log.info("a cluster of %d nodes: %s", len(self.node_ids), ", ".join(
                f"node {n} on {self.config.host}:{self.ports[n]}" for n in self.node_ids))
        for i, node_id in enumerate(self.node_ids):
            for listener in self.config.listeners:
                log.info("%slistening on %s", "" if len(self.node_ids) == 1 else f"node {node_id}: ",
                         for_node(listener, i).describe(self.listener_ports[node_id][listener.name]))

    def _accept(self, node_id: int, listeners: list[tuple[Listener, list[trio.SocketListener]]]) -> None:
        self._acceptors[node_id] = scope = trio.CancelScope()
        self._connections.setdefault(node_id, set())
        handled = [(socket_listener, listener.name, partial(self._connection, node_id, self.security[listener.name]))
                   for listener, group in listeners for socket_listener in group]
        quotas = self._quotas.setdefault(node_id, ConnectionQuotas(self.config.limits))

        async def accept() -> None:
            with scope:
                await Acceptor(self._connection_nursery, quotas).serve(handled)
        self._accepting.start_soon(accept)

    def connections_open(self) -> int:
        """Connections accepted and not yet closed, on every node."""
        return sum(quotas.total for quotas in self._quotas.values())

    def stop_listening(self, node_id: int) -> int:
        """A node goes away: its listeners close and its connections drop (their clients see
        them close, as when a broker process dies); the number of connections dropped."""
        self._acceptors.pop(node_id).cancel()
        dropped = self._connections.get(node_id, set())
        for connection in dropped:
            connection.cancel()
        return len(dropped)

    async def listen_again(self, node_id: int) -> None:
        """A stopped node comes back on the ports it had."""
        index = self.node_ids.index(node_id)
        listeners = []
        for listener in self.config.listeners:
            at = for_node(listener, index)
            opened = await trio.open_tcp_listeners(self.listener_ports[node_id][listener.name], host=at.host or None)
            listeners.append((at, opened))
        self._accept(node_id, listeners)

    def _open_shard_log(self, shard: int):
        return open_log(self.config.data_dir, self.topology, GROUP_TOPIC, shard)

    def _transaction_service(self) -> TransactionService:
        data = self.handlers.data
        return TransactionService(
            self.config.data_dir, self.config.transactions, data.store.producer_ids.allocate,
            write_data_marker=partial(write_data_marker, data), group_runner=self.runners.__getitem__,
            fsync_each=self.config.log_flush_interval_messages == 1, topology=self.topology)

    def _close_idle_connections(self) -> None:
        """At shutdown, a connection waiting for its next request closes at once; the others
        finish what they were sent (within shutdown_grace_s), then close."""
        self._stopping = True
        for inbound, reader in self._readers.items():
            if inbound.idle:
                reader.cancel()

    def _forget_topics(self, topics: set[str]) -> None:
        for runner in self.runners:
            runner.forget_topics(topics)
        if self.journal is not None:
            self.journal.topics_deleted(topics)

    def _close_logs(self) -> None:
        for runner in self.runners:
            try:
                if not self._crashed and runner.loaded:
                    runner.log.sync()
            except OffsetsLogError as e:
                log.error("shard %d: final fsync failed: %s", runner.shard.shard_id, e)
            if runner.log is not None:
                runner.log.close()
        if self.journal is not None and not self._crashed:
            self.journal.close()              # before the topics close: it samples them last
        if self.transactions is not None:
            self.transactions.close()
        if self.handlers is not None:
            self.handlers.close()

    async def _connection(self, node_id: int, security: ListenerSecurity, stream: trio.SocketStream) -> None:
        peer = _peer(stream)
        where = [] if self.topology.single else [f"node {node_id}"]
        if len(self.security) > 1:
            where.append(f"listener {security.listener.name}")
        log.info("connection from %s opened%s", peer, f" on {', '.join(where)}" if where else "")
        cancel = trio.CancelScope()                 # a stopped node drops its connections
        self._connections[node_id].add(cancel)
        try:
            with cancel:
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
                            self._readers[inbound] = reader = trio.CancelScope()
                            try:
                                with reader:            # cancelled at shutdown while idle
                                    await self._read_requests(inbound, peer, sender, node_id, security, principal)
                            finally:
                                del self._readers[inbound]
                                idle_watch.cancel()
                except* (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass                                   # the client went away mid-answer
        except Exception:                              # a handler bug must not kill the server
            log.exception("closing connection from %s after an internal error", peer)
        finally:
            self._connections[node_id].discard(cancel)
            with trio.move_on_after(1, shield=True):
                await stream.aclose()
            log.info("connection from %s closed", peer)

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

    async def _read_requests(self, inbound: Inbound, peer: str, sender: OrderedSender,
                             node_id: int, security: ListenerSecurity, principal: str) -> None:
        """Decide each request in order; a request is read only once the one before it is
        decided (so a parked JoinGroup holds the rest), while answers wait for durability.

        Pipelined requests that never park (heartbeats, commits) are the exception: every one
        already buffered goes to its shard at once, and their answers leave together.

        On a SASL listener, the session decides what comes before authentication (and
        re-authentication); the principal is the one it authenticated.
        """
        frames = inbound.frames
        host, until_closed, begin = "/" + peer.rsplit(":", 1)[0], inbound.until_closed, self.handlers.begin
        listener = security.listener.name
        session = security.new_session() if security.sasl else None
        if session is not None:
            frames.max_frame = min(frames.max_frame, security.sasl_max_receive)
        started: list = []          # pipelined requests handed to their shards, not yet answered
        try:
            while True:
                frame = frames.next_frame()
                if frame is None:
                    if started:
                        await sender.submit(await self._finish(started))
                        started = []
                        continue
                    if inbound.closed_by_peer or self._stopping:
                        return
                    inbound.idle = True
                    await inbound.receive()
                    inbound.idle = False
                    continue
                if session is None:
                    header, body = self._decode(frame)
                else:
                    header, body, step = gate(session, frame, self._decode, _UNKNOWN_API_VERSIONS, time.time() * 1000)
                    if step is not None:
                        if started:
                            await sender.submit(await self._finish(started))
                            started = []
                        ctx = header and Call(header.api_key, header.api_version, header.client_id or "", host,
                                              node_id=node_id, listener=listener)
                        if not await self._authentication_step(step, session, ctx, header, body, sender, inbound, peer):
                            return
                        frames.max_frame = self.config.socket_request_max_bytes if session.authenticated \
                            else min(frames.max_frame, security.sasl_max_receive)
                        continue
                    principal = session.principal or principal
                ctx = Call(header.api_key, header.api_version, header.client_id or "", host,
                           until_closed=until_closed, node_id=node_id, listener=listener, principal=principal)
                began = begin(ctx, body)
                if began is not None:
                    started.append((header, ctx, body, *began))
                    if len(started) < _BATCH:
                        continue
                if started:
                    await sender.submit(await self._finish(started))
                    started = []
                if began is None:
                    response = await self._respond(ctx, body)
                    await sender.submit([self._answer(header, ctx, body, response)])
        except (FrameTooLarge, DecodeError, UnsupportedVersion, ConnectionDropped) as e:
            if isinstance(e, FrameTooLarge) and session is not None and not session.authenticated:
                e = f"Failing SASL authentication due to invalid receive size ({e}: sasl.server.max.receive.size)"
            log.warning("closing connection from %s: %s", peer, safe(str(e)))
            if started:                 # what came before the bad frame is answered, as Kafka would
                await sender.submit(await self._finish(started))

    async def _authentication_step(self, step, session, ctx, header, body, sender, inbound, peer: str) -> bool:
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
            log.warning("closing connection from %s: %s", peer, safe(step.close))
            if step.response is not None:
                with trio.move_on_after(_LINGER_S):
                    await sender.drained()
                    await inbound.until_closed()
            return False
        if step.user is not None:
            log.info("connection from %s authenticated as %s (%s)", peer, session.principal, session.mechanism)
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
            return dataclasses.replace(header, api_version=0), _UNKNOWN_API_VERSIONS
        except DecodeError as e:
            raise DecodeError(f"malformed request: {e}") from None
        header = request.header
        if not self.handlers.serves(header.api_key, header.api_version):
            raise UnsupportedVersion(f"api {header.api_key} v{header.api_version} is not served")
        if (why := parse_failure(header.api_key, header.api_version, request.body)) is not None:
            raise DecodeError(f"malformed request: {why}")
        return header, request.body

    async def _respond(self, ctx: Call, body):
        if body is _UNKNOWN_API_VERSIONS:
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
        if self.faults.recording and body is not _UNKNOWN_API_VERSIONS:
            self.faults.record(ctx, body, response)
        try:
            return _encode(header, response)
        except EncodeError:
            if API_SPECS[header.api_key].runs is not Runs.DATA_PLANE:
                raise
            # a data-plane answer we cannot encode is a bug of ours: Kafka's UNKNOWN_SERVER_ERROR
            return _encode(header, whole_request_error(header.api_key, header.api_version, body,
                                                       ErrorCode.UNKNOWN_SERVER_ERROR))


def _log_bytes(directory: str) -> int:
    """The size of the files in ``directory`` (0 if there is none)."""
    try:
        with os.scandir(directory) as entries:
            return sum(entry.stat().st_size for entry in entries if entry.is_file())
    except OSError:
        return 0


#: An ApiVersions request at a version this broker does not know.
_UNKNOWN_API_VERSIONS = object()


def _encode(header, response) -> list:
    """The framed response chunks for one request (none for acks=0 produce)."""
    if response is None:
        return []
    try:
        return encode_response_parts(header.api_key, header.api_version, header.correlation_id, response)
    except EncodeError:
        log.exception("cannot encode the answer to api %d v%d", header.api_key, header.api_version)
        raise


#: How long a connection closed after its last answer waits for its client to hang up first.
_LINGER_S = 0.5
#: Answers decided but not yet sent, per connection (then the reader waits).
_IN_FLIGHT = 32
#: Pipelined requests answered together at most: fewer than a client keeps in flight, so it
#: sends its next requests while the rest of its batch is decided (32 in a batch of 32
#: leaves the two sides waiting in turn; 16 gave 40 % more heartbeats per second).
_BATCH = 16


class Answer(NamedTuple):
    """One request's answer on its way out: the shard tickets that must be released (their
    records written, and flushed if the policy says so) before it is sent, its framed chunks, and the request (to answer it otherwise if they
    never are)."""
    barriers: list
    parts: list
    header: object
    body: object

    def refused(self) -> list:
        """What a group answer whose records were never written or flushed turns into: Kafka's
        NOT_COORDINATOR (the client looks for the coordinator again)."""
        h = self.header
        return _encode(h, error_response(h.api_key, h.api_version, self.body, ErrorCode.NOT_COORDINATOR))


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


def _peer(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
        return f"{host}:{port}"
    except OSError:
        return "unknown peer"

