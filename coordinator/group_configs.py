"""Group configs (Kafka's GroupConfig): the per-group settings DescribeConfigs and
IncrementalAlterConfigs of a GROUP resource read and change, the broker settings that give their
defaults, and Kafka's validation of a group's new values."""

from __future__ import annotations

#: each group config, the broker setting that gives its default, and that default
GROUP_CONFIGS = (("consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", "5000"),
                 ("consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "45000"),
                 ("consumer.assignment.interval.ms", "group.consumer.assignment.interval.ms", "1000"))

#: each consumer group config, in Kafka's order of definition: its smallest value, and the
#: broker settings bounding it
_BOUNDS = {
    "consumer.session.timeout.ms": (1, "group.consumer.min.session.timeout.ms",
                                    "group.consumer.max.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": (1, "group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.assignment.interval.ms": (0, "group.consumer.min.assignment.interval.ms",
                                        "group.consumer.max.assignment.interval.ms"),
}


class InvalidGroupConfig(ValueError):
    """A group config value Kafka refuses (INVALID_CONFIG), with Kafka's message."""


def validate_group_configs(wanted: dict[str, str], coordinator) -> None:
    """Kafka's GroupConfig.validate for consumer groups, against the broker's ``coordinator``
    settings: each value an INT of its range, within the broker's bounds, the session longer
    than the heartbeat interval. The values not set are the broker's (the assignment
    interval's bounds are checked only when it is set)."""
    bound = {name: getattr(coordinator, field) for name, field in coordinator.kafka_names().items()}
    values = {name: bound[f"group.{name}"] for name in _BOUNDS}
    for name, (least, _, _) in _BOUNDS.items():
        if name not in wanted:
            continue
        try:
            values[name] = int(wanted[name])
        except ValueError:
            raise InvalidGroupConfig(f"Invalid value {wanted[name]} for configuration {name}: "
                                     "Not a number of type INT") from None
        if values[name] < least:
            raise InvalidGroupConfig(f"Invalid value {values[name]} for configuration {name}: "
                                     f"Value must be at least {least}")
    for name in ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
                 "consumer.assignment.interval.ms"):
        _, low, high = _BOUNDS[name]
        if name == "consumer.assignment.interval.ms" and name not in wanted:
            continue
        if values[name] < bound[low]:
            raise InvalidGroupConfig(f"{name} must be greater than or equal to {low}")
        if values[name] > bound[high]:
            raise InvalidGroupConfig(f"{name} must be less than or equal to {high}")
    if values["consumer.session.timeout.ms"] <= values["consumer.heartbeat.interval.ms"]:
        raise InvalidGroupConfig("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")


def group_setting(configs, group_id: str, name: str, default: int, low: int, high: int) -> int:
    """A group config's value, kept within the broker's bounds as Kafka evaluates it (an
    override set before the bounds changed is capped), or the broker's ``default``."""
    value = configs.get(group_id, {}).get(name)
    if value is None:
        return default
    return min(max(int(value), low), high)
