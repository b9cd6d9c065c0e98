"""Every node's listeners: their sockets (bound before the broker serves, so the ports and the
endpoints clients are told are known when the parts are built), their accept loops within the
connection limits, and their open connections, which a node that stops drops."""

from __future__ import annotations

import logging
from functools import partial

import trio

from security.listeners import Listener, for_node
from security.setup import ListenerSecurity

from broker.cluster.topology import Node
from broker.config import BrokerConfig
from broker.server.accepting import Acceptor, ConnectionQuotas
from broker.server.connection import Connection
from broker.server.listen import bind_nodes

log = logging.getLogger("groupbroker.server")


class NodeListeners:
    """``sockets``: node -> listener -> the stdlib sockets already listening (bound here if None:
    port P+i for node i of a listener on P, free ones for 0)."""

    def __init__(self, config: BrokerConfig, security: dict[str, ListenerSecurity], node_ids: list[int],
                 sockets=None):
        self.config, self.security, self.node_ids = config, security, node_ids
        self._sockets = sockets if sockets is not None else bind_nodes(config.listeners, len(node_ids))
        #: each node's bound port per listener name, and of its first listener
        self.listener_ports = {node_id: {listener.name: group[0].getsockname()[1]
                                         for listener, group in zip(config.listeners, groups)}
                               for node_id, groups in zip(node_ids, self._sockets)}
        self.ports = {node_id: ports[config.listeners[0].name] for node_id, ports in self.listener_ports.items()}
        self._acceptors: dict[int, trio.CancelScope] = {}           # each running node's accept loop
        self._connections: dict[int, set[Connection]] = {node_id: set() for node_id in node_ids}
        self._quotas: dict[int, ConnectionQuotas] = {}               # each node's connection limits
        self._accepting: trio.Nursery | None = None
        self._connection_nursery: trio.Nursery | None = None
        self._connect = None
        self.stopping = False

    def endpoints(self) -> tuple[list[Node], dict[str, list[Node]]]:
        """What clients are told of each node, per listener: its advertised address, the bound
        port where none is advertised."""
        by_listener = {listener.name: [] for listener in self.config.listeners}
        for i, node_id in enumerate(self.node_ids):
            for listener in self.config.listeners:
                at = for_node(listener, i)
                port = at.advertised_port or self.listener_ports[node_id][listener.name]
                by_listener[listener.name].append(Node(node_id, at.advertised_host, port, self.config.rack_of(i)))
        return by_listener[self.config.listeners[0].name], by_listener

    async def serve(self, connect, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Accept on every node until :meth:`close`; ``connect(stream, node_id, security)``
        makes each accepted connection's :class:`Connection`. Returns once every connection
        has closed (those busy at the close get ``shutdown_grace_s`` to finish)."""
        self._connect = connect
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as accepting:
                self._accepting, self._connection_nursery = accepting, connections
                for i, (node_id, groups) in enumerate(zip(self.node_ids, self._sockets)):
                    self._accept(node_id, [(for_node(listener, i), [
                        trio.SocketListener(trio.socket.from_stdlib_socket(s)) for s in group])
                        for listener, group in zip(self.config.listeners, groups)])
                self._log_listeners()
                task_status.started()
                await trio.sleep_forever()
            connections.cancel_scope.deadline = trio.current_time() + self.config.shutdown_grace_s

    def close(self) -> None:
        """No new connections; a connection waiting for its next request closes at once, the
        others finish what they were sent, then close."""
        log.info("shutting down: no new connections")
        self.stopping = True
        self._accepting.cancel_scope.cancel()
        for connections in self._connections.values():
            for connection in connections:
                connection.close_if_idle()

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
        handled = [(socket_listener, listener.name, partial(self._serve_connection, node_id,
                                                            self.security[listener.name]))
                   for listener, group in listeners for socket_listener in group]
        quotas = self._quotas.setdefault(node_id, ConnectionQuotas(self.config.limits))

        async def accept() -> None:
            with scope:
                await Acceptor(self._connection_nursery, quotas).serve(handled)
        self._accepting.start_soon(accept)

    async def _serve_connection(self, node_id: int, security: ListenerSecurity, stream: trio.SocketStream) -> None:
        where = [] if len(self.node_ids) == 1 else [f"node {node_id}"]
        if len(self.security) > 1:
            where.append(f"listener {security.listener.name}")
        connection = self._connect(stream, node_id, security, f" on {', '.join(where)}" if where else "")
        self._connections[node_id].add(connection)
        try:
            await connection.serve()
        finally:
            self._connections[node_id].discard(connection)

    def connections_open(self) -> int:
        """Connections accepted and not yet closed, on every node."""
        return sum(quotas.total for quotas in self._quotas.values())

    def stop_listening(self, node_id: int) -> int:
        """A node goes away: its listeners close and its connections drop (their clients see
        them close, as when a broker process dies); the number of connections dropped."""
        self._acceptors.pop(node_id).cancel()
        dropped = self._connections.get(node_id, set())
        for connection in dropped:
            connection.dropped.cancel()
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
