"""Coordinator settings under Kafka's own broker-config names, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields

from offsets_log.segment import MAX_FRAME

#: Kafka's fixed CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a brand-new member parked in its
#: first JoinGroup is dropped after this long.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    offsets_topic_num_partitions: int = 50
    group_initial_rebalance_delay_ms: int = 3_000
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = 2_147_483_647
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    #: The largest record batch a coordinator write may be: the offsets topic's
    #: max.message.bytes, which Kafka leaves at the broker's message.max.bytes.
    message_max_bytes: int = 1_048_588

    def __post_init__(self) -> None:
        if not 0 < self.message_max_bytes <= MAX_FRAME:
            # Recovery would refuse anything larger: never acknowledge such a record.
            raise ValueError(f"message.max.bytes must be between 1 and {MAX_FRAME} (the largest "
                             f"record the offsets log recovers), not {self.message_max_bytes}")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def kafka_names(cls) -> dict[str, str]:
        """Kafka config name (``group.max.size``) -> field name (``group_max_size``)."""
        return {f.name.replace("_", "."): f.name for f in fields(cls)}

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> CoordinatorConfig:
        """Build from ``server.properties``-style pairs; keys this class does not know are ignored."""
        names = cls.kafka_names()
        values = {names[k]: int(v) for k, v in props.items() if k in names}
        return cls(**values)
