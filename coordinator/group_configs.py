"""Group configs (Kafka's GroupConfig): the per-group settings DescribeConfigs and
IncrementalAlterConfigs of a GROUP resource read and change, the broker settings that give their
defaults, and Kafka's validation of a group's new values."""

from __future__ import annotations

from datetime import timedelta

from .java_duration import parse_duration

BOOLEAN, STRING, INT = 1, 2, 3          # the config types DescribeConfigs names
#: each group config in Kafka's order of definition, the broker setting that gives its default
#: (None: none does), that default, and its type
GROUP_CONFIGS = (("consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "45000", INT),
                 ("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "5000", INT),
                 ("consumer.assignment.interval.ms", "group.consumer.assignment.interval.ms", "1000", INT),
                 ("share.session.timeout.ms", "group.share.session.timeout.ms", "45000", INT),
                 ("share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", "5000", INT),
                 ("share.record.lock.duration.ms", "group.share.record.lock.duration.ms", "30000", INT),
                 ("share.delivery.count.limit", "group.share.delivery.count.limit", "5", INT),
                 ("share.partition.max.record.locks", "group.share.partition.max.record.locks", "2000", INT),
                 ("share.auto.offset.reset", None, "latest", STRING),
                 ("share.isolation.level", None, "read_uncommitted", STRING),
                 ("share.renew.acknowledge.enable", None, "true", BOOLEAN),
                 ("share.assignment.interval.ms", "group.share.assignment.interval.ms", "1000", INT),
                 ("streams.session.timeout.ms", "group.streams.session.timeout.ms", "45000", INT),
                 ("streams.heartbeat.interval.ms", "group.streams.heartbeat.interval.ms", "5000", INT),
                 ("streams.num.standby.replicas", "group.streams.num.standby.replicas", "0", INT),
                 ("streams.initial.rebalance.delay.ms", "group.streams.initial.rebalance.delay.ms", "3000", INT),
                 ("streams.assignment.interval.ms", "group.streams.assignment.interval.ms", "1000", INT))

#: each INT group config: its smallest value, and the broker settings bounding it, in the order
#: Kafka checks them
_BOUNDS = {
    "consumer.heartbeat.interval.ms": (1, "group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.session.timeout.ms": (1, "group.consumer.min.session.timeout.ms",
                                    "group.consumer.max.session.timeout.ms"),
    "consumer.assignment.interval.ms": (0, "group.consumer.min.assignment.interval.ms",
                                        "group.consumer.max.assignment.interval.ms"),
    "share.heartbeat.interval.ms": (1, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    "share.session.timeout.ms": (1, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    "share.record.lock.duration.ms": (1000, "group.share.min.record.lock.duration.ms",
                                      "group.share.max.record.lock.duration.ms"),
    "share.delivery.count.limit": (2, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    "share.partition.max.record.locks": (100, "group.share.min.partition.max.record.locks",
                                         "group.share.max.partition.max.record.locks"),
    "share.assignment.interval.ms": (0, "group.share.min.assignment.interval.ms",
                                     "group.share.max.assignment.interval.ms"),
    "streams.heartbeat.interval.ms": (1, "group.streams.min.heartbeat.interval.ms",
                                      "group.streams.max.heartbeat.interval.ms"),
    "streams.session.timeout.ms": (1, "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    "streams.num.standby.replicas": (0, None, "group.streams.max.standby.replicas"),
    "streams.initial.rebalance.delay.ms": (0, None, None),
    "streams.assignment.interval.ms": (0, "group.streams.min.assignment.interval.ms",
                                       "group.streams.max.assignment.interval.ms"),
}
#: checked only when set (the others are checked at their broker default too)
_WHEN_SET = ("consumer.assignment.interval.ms", "share.assignment.interval.ms", "streams.assignment.interval.ms")


class InvalidGroupConfig(ValueError):
    """A group config value Kafka refuses (INVALID_CONFIG), with Kafka's message."""


def share_reset_duration(value: str) -> timedelta | None:
    """The duration of a ``by_duration:<ISO-8601>`` share.auto.offset.reset (Kafka's
    AutoOffsetResetStrategy: case as written, not negative); None for any other value."""
    if not value.startswith("by_duration:"):
        return None
    try:
        duration = parse_duration(value[len("by_duration:"):])
    except ValueError:
        return None
    return None if duration < timedelta(0) else duration


def _parse(name: str, value: str):
    """Kafka's ConfigDef parsing and validators of one group config's new value."""
    if name == "share.auto.offset.reset":
        if share_reset_duration(value.strip()) is not None or value.strip() in ("earliest", "latest"):
            return value
        raise InvalidGroupConfig(f"Invalid value {value} for configuration {name}: Invalid value `{value}` for "
                                 f"configuration {name}. The value must be either 'earliest', 'latest' or of the "
                                 "format 'by_duration:<PnDTnHnMn.nS>'.")
    if name == "share.isolation.level":
        if value not in ("read_committed", "read_uncommitted"):
            raise InvalidGroupConfig(f"Invalid value {value} for configuration {name}: String must be one of: "
                                     "read_committed, read_uncommitted")
        return value
    if name == "share.renew.acknowledge.enable":
        if value.strip().lower() not in ("true", "false"):
            raise InvalidGroupConfig(f"Invalid value {value} for configuration {name}: Expected value to be "
                                     "either true or false")
        return value
    try:
        number = int(value.strip())
    except ValueError:
        raise InvalidGroupConfig(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    least = _BOUNDS[name][0]
    if number < least:
        raise InvalidGroupConfig(f"Invalid value {number} for configuration {name}: Value must be at least {least}")
    return number


def validate_group_configs(wanted: dict[str, str], coordinator) -> None:
    """Kafka's GroupConfig.validate against the broker's ``coordinator`` settings: each value
    of its type and range, within the broker's bounds, each session longer than its heartbeat
    interval. The values not set are the broker's."""
    bound = {name: getattr(coordinator, field) for name, field in coordinator.kafka_names().items()}
    values = {name: bound[synonym] for name, synonym, _, _ in GROUP_CONFIGS if synonym in bound}
    for name, _, _, _ in GROUP_CONFIGS:
        if name in wanted:
            values[name] = _parse(name, wanted[name])
    for name, (_, low, high) in _BOUNDS.items():
        if name in _WHEN_SET and name not in wanted:
            continue
        if low is not None and values[name] < bound[low]:
            raise InvalidGroupConfig(f"{name} must be greater than or equal to {low}")
        if high is not None and values[name] > bound[high]:
            raise InvalidGroupConfig(f"{name} must be less than or equal to {high}")
    for kind in ("consumer", "share", "streams"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            raise InvalidGroupConfig(f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")


def bounded_setting(configs, group_id: str, coordinator, name: str) -> int:
    """The group config ``name`` (``share.session.timeout.ms``) as :func:`group_setting` gives
    it: its default the broker's ``group.<name>``, its bounds ``group.<kind>.min.<rest>`` and
    ``.max.``."""
    kind, rest = name.split(".", 1)
    field = f"group_{kind}_" + rest.replace(".", "_")
    return group_setting(configs, group_id, name, getattr(coordinator, field),
                         getattr(coordinator, field.replace(f"group_{kind}_", f"group_{kind}_min_")),
                         getattr(coordinator, field.replace(f"group_{kind}_", f"group_{kind}_max_")))


def group_setting(configs, group_id: str, name: str, default: int, low: int, high: int) -> int:
    """A group config's value, kept within the broker's bounds as Kafka evaluates it (an
    override set before the bounds changed is capped), or the broker's ``default``."""
    value = configs.get(group_id, {}).get(name)
    if value is None:
        return default
    return min(max(int(value), low), high)
