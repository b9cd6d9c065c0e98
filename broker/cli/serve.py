"""``groupbroker serve``: run the broker in the foreground (the server is imported only here)."""

from __future__ import annotations

import logging
import sys


def add_parser(commands) -> None:
    serve = commands.add_parser("serve", help="run the broker")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on; 0 picks a free one (default 9092)")
    serve.add_argument("--data-dir", help="where logs live (default ./groupbroker-data)")
    serve.add_argument("--nodes", type=int, help="broker nodes to run in this process: node ids "
                       "0..N-1 on ports P..P+N-1 (free ones with --port 0), each coordinating and "
                       "leading its share (default 1)")
    serve.add_argument("--config", help="a server.properties file (Kafka's config names)")
    serve.add_argument("--admin-port", type=int, help="serve the fault-injection admin endpoint "
                       "(groupbroker faults) on this port of 127.0.0.1; 0 picks a free one (logged)")
    serve.add_argument("-o", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="set one config by Kafka's name, e.g. -o group.initial.rebalance.delay.ms=0")


def run(args) -> int:
    from broker.config import BrokerConfig, ConfigError, command_line_properties
    from security.settings import SettingsError
    from security.setup import build_security
    from broker.server.listen import HeldSignals, bind_nodes

    try:
        config = BrokerConfig.build(command_line_properties(args.config, args.overrides), host=args.host,
                                    port=args.port, data_dir=args.data_dir, admin_port=args.admin_port,
                                    nodes=args.nodes)
    except (OSError, ConfigError) as e:
        logging.getLogger("groupbroker").error("bad configuration: %s", e)
        return 2
    try:
        security = build_security(config)
    except SettingsError as e:
        logging.getLogger("groupbroker").error("bad configuration: %s", e)
        return 2
    held = HeldSignals()
    try:
        sockets = bind_nodes(config.listeners, config.nodes)        # node -> listener -> sockets
    except OSError as e:
        logging.getLogger("groupbroker").error("%s", e.strerror or e)
        return 1
    # The ports accept from here on; the server (imported only now) takes the sockets over.
    # The line names the first listener of each node (the log names every listener).
    addresses = ",".join(f"{config.host}:{node[0][0].getsockname()[1]}" for node in sockets)
    sys.stdout.write(f"groupbroker listening on {addresses}\n")
    sys.stdout.flush()
    from broker.server.run import run_until_signalled
    return run_until_signalled(config, sockets, held, security)
