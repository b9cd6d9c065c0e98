"""``groupbroker apis``: the APIs and versions the broker serves, exactly what ApiVersions says,
and the feature levels it finalizes (``-o``/``--config`` as ``serve`` takes them)."""

from __future__ import annotations

import logging
import sys

from protocol.registry import describe


def add_parser(commands) -> None:
    apis = commands.add_parser("apis", help="print the Kafka APIs and versions this broker serves and the "
                                            "features it finalizes (what ApiVersions advertises)")
    apis.add_argument("--config", help="a server.properties file (Kafka's config names)")
    apis.add_argument("-o", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="a setting, e.g. -o groupbroker.feature.transaction.version=1")


def run(args) -> int:
    from broker.config import BrokerConfig, ConfigError, command_line_properties
    from broker.dispatch.api_versions import finalized_features
    from broker.dispatch.served import SERVED_APIS
    try:
        config = BrokerConfig.build(command_line_properties(args.config, args.overrides))
    except (OSError, ConfigError) as e:
        logging.getLogger("groupbroker").error("bad configuration: %s", e)
        return 2
    features = ", ".join(f"{name}={level}" for name, level in finalized_features(config.features))
    sys.stdout.write(describe(SERVED_APIS) + f"\nfinalized features: {features}\n")
    return 0
