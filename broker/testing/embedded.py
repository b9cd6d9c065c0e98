"""A broker in a background thread, for tests and scripts in any concurrency model.

The broker runs its own trio loop in a daemon thread, so plain tests, asyncio tests and trio
tests all use it the same way: point clients at :attr:`EmbeddedBroker.bootstrap_servers`.
Fault injection goes through :attr:`EmbeddedBroker.faults`, whose methods are the
operations of :class:`broker.faults.control.BrokerControl` (``faults.fail("Heartbeat",
"REBALANCE_IN_PROGRESS", count=3)``, ``faults.force_rebalance("my-group")``, ...); each call
returns once the broker has applied it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from pathlib import Path

import trio

from security.listeners import for_nodes
from apache_kafka.properties import kafka_props

from broker.config import BrokerConfig
from broker.dispatch.served import INJECTABLE_APIS
from broker.faults.control import ControlProxy
from broker.faults.rules import Faults, RecordedRequest
from broker.server.broker import Broker
from broker.server.listen import bind
from broker.testing.launcher import TEST_DEFAULTS, wait_until_answering

log = logging.getLogger("groupbroker.embedded")


class EmbeddedBroker:
    def __init__(self, data_dir: str | Path, props: dict | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, nodes: int = 1, call_timeout_s: float = 30.0):
        self.data_dir = str(data_dir)
        self.props = kafka_props({**TEST_DEFAULTS, **(props or {})})
        self.host, self.port, self.nodes = host, port, nodes
        self.ports: list[int] = []                 # every node's, once started (kept on restart)
        self._bound: list[dict[str, int]] = []     # every node's port per listener name
        self.call_timeout_s = call_timeout_s
        self.faults = ControlProxy(self._control)
        self._faults = Faults(INJECTABLE_APIS)                   # rules and recording outlive restarts
        self.broker: Broker | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._thread: threading.Thread | None = None

    @property
    def bootstrap_servers(self) -> str:
        """Every node's address, node 0 first."""
        return ",".join(f"{self.host}:{port}" for port in self.ports or [self.port])

    def bootstrap_for(self, listener: str) -> str:
        """Every node's address on the listener named ``listener`` (e.g. ``SASL_SSL``)."""
        return ",".join(f"{self.host}:{bound[listener.upper()]}" for bound in self._bound)

    def start(self) -> EmbeddedBroker:
        """Start the broker; returns once every shard is loaded and it answers ApiVersions."""
        config = BrokerConfig.build(self.props, host=self.host, port=self.port, data_dir=self.data_dir,
                                     nodes=self.nodes)
        started = concurrent.futures.Future()
        # a restart listens on the ports it had (free ones need not be consecutive)
        sockets = [[bind(listener.host, bound[listener.name]) for listener in for_nodes(config.listeners, i)]
                   for i, bound in enumerate(self._bound)] if self._bound else None
        self.broker = Broker(config, self._faults, sockets=sockets)
        self._thread = threading.Thread(target=self._run, args=(self.broker, started),
                                        name=f"groupbroker {self.data_dir}", daemon=True)
        self._thread.start()
        started.result(timeout=self.call_timeout_s)
        self.port = self.broker.port          # the same port again on every restart
        self.ports = [self.broker.ports[n] for n in self.broker.node_ids]
        self._bound = [self.broker.listener_ports[n] for n in self.broker.node_ids]
        for port in self.ports:
            wait_until_answering(self.host, port, self.call_timeout_s)
        return self

    def stop(self, *, crash: bool = False) -> None:
        """Stop gracefully, or ``crash``: at once, as ``kill -9`` would (see Broker.stop)."""
        if self._thread is None:
            return
        broker = self.broker
        self._token.run_sync_soon(lambda: broker.stop(crash=crash))
        self._thread.join(timeout=self.call_timeout_s)
        if self._thread.is_alive():
            raise RuntimeError("the embedded broker did not stop")
        self._thread = None

    def restart(self, *, crash: bool = False) -> None:
        """Stop (gracefully, or as a crash) and start again on the same port and data dir."""
        self.stop(crash=crash)
        self.start()

    def recorded(self, *, clear: bool = False) -> list[RecordedRequest]:
        """The requests answered since recording started (the pytest fixture starts it)."""
        return [RecordedRequest.of(r) for r in self.faults.recorded(clear=clear)]

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self, broker: Broker, started: concurrent.futures.Future) -> None:
        async def main() -> None:
            self._token = trio.lowlevel.current_trio_token()
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(broker.serve)
                await broker.ready.wait()
                started.set_result(None)
        try:
            trio.run(main)
        except Exception as e:                     # report a failed start to start()'s caller
            if not started.done():
                started.set_exception(e)
            else:
                log.exception("the embedded broker stopped with an error")

    def _control(self, op: str, arguments: dict):
        if self._thread is None:
            raise RuntimeError("the embedded broker is not running")
        done = concurrent.futures.Future()

        async def execute() -> None:
            try:
                done.set_result(await self.broker.control.execute(op, **arguments))
            except Exception as e:                 # handed to the caller's thread
                done.set_exception(e)

        self._token.run_sync_soon(lambda: self._nursery.start_soon(execute))
        return done.result(timeout=self.call_timeout_s)
