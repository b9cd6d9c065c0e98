"""The listening sockets, opened before the server is imported: ``groupbroker serve`` prints
its line once the port accepts connections (the kernel queues them, and their requests, until
the server takes the sockets over a moment later). Standard library only, so that this
costs no import of trio or of the broker.
"""

from __future__ import annotations

import signal
import socket

BACKLOG = 0xFFFF           # as trio's open_tcp_listeners asks (the kernel caps it)


def bind_nodes(listeners, nodes: int) -> list[list[list[socket.socket]]]:
    """Every node's sockets for every listener (node i listens on port P+i of a listener on P,
    on a free one for 0); OSError names the address that could not be bound."""
    from security.listeners import for_node
    bound: list[list[list[socket.socket]]] = []
    try:
        for i in range(nodes):
            bound.append([])
            for listener in (for_node(each, i) for each in listeners):
                try:
                    bound[-1].append(bind(listener.host, listener.port))
                except OSError as e:
                    raise OSError(e.errno, f"cannot listen on {listener.host or '*'}:{listener.port} "
                                           f"(listener {listener.name}): {e.strerror}") from None
    except OSError:
        for node in bound:
            for group in node:
                for sock in group:
                    sock.close()
        raise
    return bound


def bind(host: str, port: int) -> list[socket.socket]:
    """A listening socket on every address ``host`` resolves to (as trio.open_tcp_listeners
    binds them); ``port`` 0 picks a free one, the same for each if it can."""
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(
                host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(BACKLOG)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class HeldSignals:
    """SIGINT and SIGTERM noted, not acted on, until the server watches for them itself: a
    stop asked for while it starts is carried out once it has started."""

    NAMES = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.caught: list[int] = []
        for signum in self.NAMES:
            signal.signal(signum, lambda number, _frame: self.caught.append(number))
