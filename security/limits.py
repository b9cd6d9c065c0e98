"""Kafka's connection limits (SocketServer's ConnectionQuotas), as settings: ``max.connections``
and ``max.connection.creation.rate`` per broker and per listener
(``listener.name.<l>.max.connections``), ``max.connections.per.ip`` with
``max.connections.per.ip.overrides`` (``host:count,...``). Kafka's defaults: no limit."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

UNLIMITED = 2**31 - 1                 # Kafka's Int.MaxValue default


class LimitError(ValueError):
    """A limit Kafka would refuse at startup."""


@dataclass(frozen=True)
class ConnectionLimitSettings:
    max_connections: int = UNLIMITED
    max_connection_creation_rate: int = UNLIMITED         # new connections a second
    max_connections_per_ip: int = UNLIMITED
    per_ip_overrides: dict[str, int] = field(default_factory=dict)     # address -> its limit
    per_listener: dict[str, tuple[int, int]] = field(default_factory=dict)   # name -> (max, rate)

    def ip_limit(self, address: str) -> int:
        return self.per_ip_overrides.get(address, self.max_connections_per_ip)

    def listener(self, name: str) -> tuple[int, int]:
        return self.per_listener.get(name, (UNLIMITED, UNLIMITED))


def parse_limits(props: dict[str, str], listener_names) -> ConnectionLimitSettings:
    def number(name: str, default: int = UNLIMITED, lowest: int = 0) -> int:
        raw = props.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise LimitError(f"{name}={raw}: not a whole number") from None
        if value < lowest:
            raise LimitError(f"{name}={raw}: must be at least {lowest}")
        return value

    per_ip = number("max.connections.per.ip")
    overrides = {}
    for item in (part.strip() for part in props.get("max.connections.per.ip.overrides", "").split(",")):
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        try:
            overrides[socket.gethostbyname(host) if host and ":" not in host else host] = int(count)
        except (ValueError, OSError):
            raise LimitError(f"max.connections.per.ip.overrides contains invalid addresses : {item}") from None
        if not sep or not host:
            raise LimitError(f"max.connections.per.ip.overrides: cannot read {item!r} (expected host:count)")
    if per_ip == 0 and not overrides:
        raise LimitError("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                         "property is set.")
    per_listener = {}
    for name in listener_names:
        prefix = f"listener.name.{name.lower()}."
        pair = (number(prefix + "max.connections"), number(prefix + "max.connection.creation.rate"))
        if pair != (UNLIMITED, UNLIMITED):
            per_listener[name] = pair
    return ConnectionLimitSettings(number("max.connections"), number("max.connection.creation.rate"),
                                   per_ip, overrides, per_listener)
