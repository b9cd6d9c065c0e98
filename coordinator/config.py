"""Coordinator settings under Kafka's own broker-config names, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields

from offsets_log.limits import MAX_FRAME

#: Kafka's fixed CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a brand-new member parked in its
#: first JoinGroup is dropped after this long.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

#: Kafka's ConsumerGroupMigrationPolicy values (case-insensitive)
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class KafkaNamed:
    """A settings dataclass whose fields are Kafka's config names with dots as underscores."""
    __slots__ = ()

    @classmethod
    def kafka_names(cls) -> dict[str, str]:
        """Kafka config name (``group.max.size``) -> field name (``group_max_size``)."""
        return {f.name.replace("_", "."): f.name for f in fields(cls)}

    @classmethod
    def from_properties(cls, props: dict[str, str]):
        """Build from ``server.properties``-style pairs; keys this class does not know are ignored."""
        names = cls.kafka_names()
        types = {f.name: type(f.default) for f in fields(cls)}
        return cls(**{names[k]: types[names[k]](v) for k, v in props.items() if k in names})


@dataclass(frozen=True, slots=True)
class CoordinatorConfig(KafkaNamed):
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
    # KIP-848 consumer groups (Kafka's GroupCoordinatorConfig)
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_max_size: int = 2_147_483_647
    #: the server-side assignors, the first one the default
    group_consumer_assignors: str = "uniform,range"
    #: converting live groups between the protocols: disabled, upgrade (classic to consumer),
    #: downgrade (consumer to classic) or bidirectional
    group_consumer_migration_policy: str = "bidirectional"
    #: target assignments are batched (Kafka 4.3, KIP-1263): a group's next one is computed no
    #: sooner than this after its last one (0: at once); groups may override it within the bounds
    group_consumer_assignment_interval_ms: int = 1_000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15_000
    # KIP-932 share groups (Kafka's GroupCoordinatorConfig)
    group_share_max_size: int = 200
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_assignment_interval_ms: int = 1_000
    group_share_min_assignment_interval_ms: int = 0
    group_share_max_assignment_interval_ms: int = 15_000
    # KIP-932 share partitions (Kafka's ShareGroupConfig): record locks, deliveries, sessions
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_delivery_count_limit: int = 5
    group_share_min_delivery_count_limit: int = 2
    group_share_max_delivery_count_limit: int = 10
    group_share_partition_max_record_locks: int = 2_000
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4_000
    group_share_max_share_sessions: int = 2_000
    # KIP-1071 streams groups (Kafka's GroupCoordinatorConfig)
    group_streams_session_timeout_ms: int = 45_000
    group_streams_min_session_timeout_ms: int = 45_000
    group_streams_max_session_timeout_ms: int = 60_000
    group_streams_heartbeat_interval_ms: int = 5_000
    group_streams_min_heartbeat_interval_ms: int = 5_000
    group_streams_max_heartbeat_interval_ms: int = 15_000
    group_streams_max_size: int = 2_147_483_647
    group_streams_num_standby_replicas: int = 0
    group_streams_max_standby_replicas: int = 2
    group_streams_initial_rebalance_delay_ms: int = 3_000
    group_streams_assignment_interval_ms: int = 1_000
    group_streams_min_assignment_interval_ms: int = 0
    group_streams_max_assignment_interval_ms: int = 15_000

    def __post_init__(self) -> None:
        if not 0 < self.message_max_bytes <= MAX_FRAME:
            # Recovery would refuse anything larger: never acknowledge such a record.
            raise ValueError(f"message.max.bytes must be between 1 and {MAX_FRAME} (the largest "
                             f"record the offsets log recovers), not {self.message_max_bytes}")
        self._check_bounds("group.consumer.session.timeout.ms", self.group_consumer_session_timeout_ms,
                           self.group_consumer_min_session_timeout_ms,
                           self.group_consumer_max_session_timeout_ms)
        self._check_bounds("group.consumer.heartbeat.interval.ms",
                           self.group_consumer_heartbeat_interval_ms,
                           self.group_consumer_min_heartbeat_interval_ms,
                           self.group_consumer_max_heartbeat_interval_ms)
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms must be less than "
                             "group.consumer.session.timeout.ms")
        self._check_bounds("group.share.session.timeout.ms", self.group_share_session_timeout_ms,
                           self.group_share_min_session_timeout_ms, self.group_share_max_session_timeout_ms)
        self._check_bounds("group.share.heartbeat.interval.ms", self.group_share_heartbeat_interval_ms,
                           self.group_share_min_heartbeat_interval_ms,
                           self.group_share_max_heartbeat_interval_ms)
        if self.group_share_heartbeat_interval_ms >= self.group_share_session_timeout_ms:
            raise ValueError("group.share.heartbeat.interval.ms must be less than "
                             "group.share.session.timeout.ms")
        self._check_bounds("group.share.assignment.interval.ms", self.group_share_assignment_interval_ms,
                           self.group_share_min_assignment_interval_ms,
                           self.group_share_max_assignment_interval_ms)
        self._check_assignment_interval()
        for name in ("record.lock.duration.ms", "delivery.count.limit", "partition.max.record.locks"):
            field = "group_share_" + name.replace(".", "_")
            self._check_bounds("group.share." + name, getattr(self, field),
                               getattr(self, field.replace("group_share_", "group_share_min_")),
                               getattr(self, field.replace("group_share_", "group_share_max_")))
        self._check_streams()
        if self.group_consumer_migration_policy.lower() not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of "
                             f"{', '.join(MIGRATION_POLICIES)}, not {self.group_consumer_migration_policy}")
        unknown = [a for a in self.consumer_assignors if a not in ("uniform", "range")]
        if unknown or not self.consumer_assignors:
            raise ValueError(f"group.consumer.assignors: unknown assignor(s) {unknown}; "
                             "the built-in ones are uniform and range")

    def _check_assignment_interval(self) -> None:
        """Kafka's GroupCoordinatorConfig checks of the assignment interval, in its order."""
        name, low, high = ("group.consumer.assignment.interval.ms",
                           "group.consumer.min.assignment.interval.ms",
                           "group.consumer.max.assignment.interval.ms")
        value, lowest, highest = (self.group_consumer_assignment_interval_ms,
                                  self.group_consumer_min_assignment_interval_ms,
                                  self.group_consumer_max_assignment_interval_ms)
        for setting, v in ((name, value), (low, lowest), (high, highest)):
            if v < 0:
                raise ValueError(f"Invalid value {v} for configuration {setting}: Value must be at least 0")
        if highest < lowest:
            raise ValueError(f"{high} must be greater than or equal to {low}")
        if value < lowest:
            raise ValueError(f"{name} must be greater than or equal to {low}")
        if value > highest:
            raise ValueError(f"{name} must be less than or equal to {high}")

    def _check_streams(self) -> None:
        """Kafka's GroupCoordinatorConfig checks of the streams-group settings, in its order and
        words."""
        least = {"group.streams.num.standby.replicas": 0, "group.streams.max.standby.replicas": 0,
                 "group.streams.initial.rebalance.delay.ms": 0, "group.streams.assignment.interval.ms": 0,
                 "group.streams.min.assignment.interval.ms": 0, "group.streams.max.assignment.interval.ms": 0}
        for name, field in self.kafka_names().items():
            if name.startswith("group.streams.") and getattr(self, field) < least.get(name, 1):
                raise ValueError(f"Invalid value {getattr(self, field)} for configuration {name}: "
                                 f"Value must be at least {least.get(name, 1)}")

        def v(name: str) -> int:
            return getattr(self, "group_streams_" + name.replace(".", "_"))
        for kind in ("heartbeat.interval.ms", "session.timeout.ms"):
            lo_name, hi_name = f"group.streams.min.{kind}", f"group.streams.max.{kind}"
            if v(f"max.{kind}") < v(f"min.{kind}"):
                raise ValueError(f"{hi_name} must be greater than or equal to {lo_name}")
            if v(kind) < v(f"min.{kind}"):
                raise ValueError(f"group.streams.{kind} must be greater than or equal to {lo_name}")
            if v(kind) > v(f"max.{kind}"):
                raise ValueError(f"group.streams.{kind} must be less than or equal to {hi_name}")
        if v("heartbeat.interval.ms") >= v("session.timeout.ms"):
            raise ValueError("group.streams.heartbeat.interval.ms must be less than group.streams.session.timeout.ms")
        kind = "assignment.interval.ms"
        if v(f"max.{kind}") < v(f"min.{kind}"):
            raise ValueError(f"group.streams.max.{kind} must be greater than or equal to group.streams.min.{kind}")
        if v(kind) < v(f"min.{kind}"):
            raise ValueError(f"group.streams.{kind} must be greater than or equal to group.streams.min.{kind}")
        if v(kind) > v(f"max.{kind}"):
            raise ValueError(f"group.streams.{kind} must be less than or equal to group.streams.max.{kind}")
        if v("num.standby.replicas") > v("max.standby.replicas"):
            raise ValueError("group.streams.num.standby.replicas must be less than or equal to "
                             "group.streams.max.standby.replicas")

    @staticmethod
    def _check_bounds(name: str, value: int, low: int, high: int) -> None:
        """Kafka's GroupCoordinatorConfig requires min <= value <= max."""
        if not low <= value <= high:
            raise ValueError(f"{name} ({value}) must be between {name.replace('.ms', '')} bounds "
                             f"{low} and {high} (its .min and .max settings)")

    @property
    def upgrade_enabled(self) -> bool:
        return self.group_consumer_migration_policy.lower() in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.group_consumer_migration_policy.lower() in ("downgrade", "bidirectional")

    @property
    def consumer_assignors(self) -> tuple[str, ...]:
        return tuple(a.strip() for a in self.group_consumer_assignors.split(",") if a.strip())

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
