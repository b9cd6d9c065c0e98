"""Run a broker in the foreground until SIGINT or SIGTERM, then shut down cleanly (exit 0).

Its one stdout line, ``groupbroker listening on HOST:PORT``, comes as soon as the listeners
are open, before the coordinator shards have loaded (the log says ``all N coordinator shards
loaded`` when they have).
"""

from __future__ import annotations

import logging
import signal
import sys

import trio

from broker.config import BrokerConfig
from broker.server.broker import Broker

log = logging.getLogger("groupbroker")


def run_until_signalled(config: BrokerConfig) -> int:
    async def main() -> None:
        broker = Broker(config)
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                # Announced as soon as it accepts: the shards load meanwhile, in worker threads,
                # and a group whose shard is still loading is answered COORDINATOR_LOAD_IN_PROGRESS
                # (clients retry it), as Kafka does while it loads a coordinator.
                await nursery.start(broker.serve)
                sys.stdout.write(f"groupbroker listening on {config.host}:{broker.port}\n")
                sys.stdout.flush()
                async for signum in signals:
                    log.info("received %s: stopping", signal.Signals(signum).name)
                    broker.stop()
                    break
    trio.run(main)
    log.info("stopped")
    return 0
