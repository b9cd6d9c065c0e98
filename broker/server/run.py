"""Run a broker in the foreground until SIGINT or SIGTERM, then shut down cleanly (exit 0).

It serves on sockets already listening (broker/server/listen.py, whose line the command has
printed): the coordinator shards load meanwhile, and a group whose shard is still loading is
answered COORDINATOR_LOAD_IN_PROGRESS (clients retry it), as Kafka does while it loads a
coordinator; the log says ``all N coordinator shards loaded`` when they have.
"""

from __future__ import annotations

import logging
import signal

import trio

from broker.config import BrokerConfig
from broker.server.broker import Broker
from broker.server.listen import HeldSignals

log = logging.getLogger("groupbroker")


def run_until_signalled(config: BrokerConfig, sockets: list, held: HeldSignals, security=None) -> int:
    async def main() -> None:
        broker = Broker(config, security=security, sockets=sockets)
        with trio.open_signal_receiver(*HeldSignals.NAMES) as signals:
            async with trio.open_nursery() as nursery, trio.open_nursery() as admin:
                if config.admin_port is not None:        # first, so it is up once the broker answers
                    from broker.faults.endpoint import serve_admin     # imported only when it is on
                    await admin.start(serve_admin, broker.control, config.admin_host, config.admin_port,
                                      config.data_dir)
                await nursery.start(broker.serve)
                if held.caught:                 # asked to stop while it was starting
                    log.info("received %s while starting: stopping", signal.Signals(held.caught[0]).name)
                else:
                    async for signum in signals:
                        log.info("received %s: stopping", signal.Signals(signum).name)
                        break
                admin.cancel_scope.cancel()
                broker.stop()
    trio.run(main)
    log.info("stopped")
    return 0
