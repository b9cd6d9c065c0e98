"""Kafka's listener settings: ``listeners``, ``advertised.listeners`` and
``listener.security.protocol.map``, read as Kafka reads them (names are case-insensitive and
kept upper-case; each listener needs a protocol; names and ports are unique). Listeners named
in ``controller.listener.names`` are KRaft controller endpoints, which this broker has no use
for: they are left unopened (a config copied from a Kafka container still starts).
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, replace

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Kafka's default listener.security.protocol.map: every protocol under its own name.
DEFAULT_PROTOCOL_MAP = {p: p for p in PROTOCOLS}
#: NAME://host:port, the host possibly empty (every interface) or an IPv6 address in brackets.
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


class ListenerError(ValueError):
    """Listener settings Kafka would refuse at startup."""


@dataclass(frozen=True, slots=True)
class Listener:
    name: str                 # upper-case, as Kafka normalises listener names
    protocol: str             # one of PROTOCOLS
    host: str                 # to bind: "" binds every interface
    port: int                 # 0: a free one
    advertised_host: str      # what Metadata and FindCoordinator tell clients
    advertised_port: int      # 0: the bound port

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def describe(self, port: int | None = None) -> str:
        name = self.name if self.name == self.protocol else f"{self.name} ({self.protocol})"
        return f"{name} on {self.host or '*'}:{self.port if port is None else port}"


def parse_endpoints(value: str, setting: str) -> list[tuple[str, str, int]]:
    """``NAME://host:port,...`` -> (NAME, host, port) each."""
    endpoints = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if match is None:
            raise ListenerError(f"{setting}: cannot read {item!r} (expected NAME://host:port)")
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if not 0 <= port <= 65535:
            raise ListenerError(f"{setting}: port {port} of {name} is out of range")
        endpoints.append((name, host, port))
    names = [name for name, _, _ in endpoints]
    if len(set(names)) != len(names):
        raise ListenerError(f"{setting}: each listener must have a different name, listeners: {value}")
    return endpoints


def parse_protocol_map(value: str | None) -> dict[str, str]:
    if value is None:
        return dict(DEFAULT_PROTOCOL_MAP)
    mapping = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip():
            raise ListenerError(f"listener.security.protocol.map: cannot read {item!r} (expected NAME:PROTOCOL)")
        if protocol not in PROTOCOLS:
            raise ListenerError(f"listener.security.protocol.map: unknown security protocol {protocol!r} "
                                f"(one of {', '.join(PROTOCOLS)})")
        mapping[name.strip().upper()] = protocol
    return mapping


def build_listeners(props: dict[str, str] | None = None, host: str | None = None, port: int | None = None
                    ) -> tuple[Listener, ...]:
    """The listeners to open, in the configured order; ``host`` and ``port`` (the command line's
    --host and --port) replace the first one's. Without ``listeners``: one PLAINTEXT listener on
    127.0.0.1:9092, or on ``host``/``port``."""
    props = props or {}
    protocols = parse_protocol_map(props.get("listener.security.protocol.map"))
    controllers = {n.strip().upper() for n in props.get("controller.listener.names", "").split(",") if n.strip()}
    configured = parse_endpoints(props.get("listeners", "PLAINTEXT://127.0.0.1:9092"), "listeners")
    configured = [e for e in configured if e[0] not in controllers]
    if not configured:
        raise ListenerError("listeners: no listener left to serve clients on (all are controller listeners)")
    if host is not None or port is not None:
        name, first_host, first_port = configured[0]
        configured[0] = (name, first_host if host is None else host, first_port if port is None else port)
    ports = [p for _, _, p in configured if p != 0]
    if len(set(ports)) != len(ports):
        raise ListenerError(f"listeners: each listener must have a different port, listeners: "
                            f"{', '.join(f'{n}://{h}:{p}' for n, h, p in configured)}")
    advertised = {name: (h, p) for name, h, p in
                  parse_endpoints(props.get("advertised.listeners", ""), "advertised.listeners")}
    unknown = set(advertised) - {name for name, _, _ in configured}
    if unknown:
        raise ListenerError(f"advertised.listeners: {', '.join(sorted(unknown))} is not among the listeners")
    listeners = []
    for name, bind_host, bind_port in configured:
        if name not in protocols:
            raise ListenerError(f"no security protocol defined for listener {name} "
                                f"(listener.security.protocol.map)")
        adv_host, adv_port = advertised.get(name, (bind_host, 0))
        if not adv_host:             # Kafka advertises the canonical host name of a wildcard bind
            adv_host = socket.getfqdn()
        listeners.append(Listener(name, protocols[name], bind_host, bind_port, adv_host, adv_port))
    return tuple(listeners)


def for_node(listener: Listener, index: int) -> Listener:
    """The ``index``-th node's copy in a cluster of one process: ports P+index (0 stays 0)."""
    def shift(port: int) -> int:
        return port + index if port else 0
    return replace(listener, port=shift(listener.port), advertised_port=shift(listener.advertised_port))


def for_nodes(listeners, index: int) -> list[Listener]:
    return [for_node(listener, index) for listener in listeners]
