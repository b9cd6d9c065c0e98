"""Run a broker in the foreground until SIGINT or SIGTERM, then shut down cleanly (exit 0)."""

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
                await nursery.start(broker.serve)
                await broker.ready.wait()        # accepting already; announced once shards loaded
                sys.stdout.write(f"groupbroker listening on {config.host}:{broker.port}\n")
                sys.stdout.flush()
                async for signum in signals:
                    log.info("received %s: stopping", signal.Signals(signum).name)
                    broker.stop()
                    break
    trio.run(main)
    log.info("stopped")
    return 0
