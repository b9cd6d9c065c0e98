"""Transaction coordinator settings under Kafka's broker-config names, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    transaction_state_log_num_partitions: int = 50
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    transaction_state_log_segment_bytes: int = 104_857_600

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 1:
                raise ValueError(f"{f.name.replace('_', '.')} must be at least 1")

    @classmethod
    def kafka_names(cls) -> dict[str, str]:
        """Kafka config name (``transaction.max.timeout.ms``) -> field name."""
        return {f.name.replace("_", "."): f.name for f in fields(cls)}

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> TransactionConfig:
        names = cls.kafka_names()
        return cls(**{names[k]: int(v) for k, v in props.items() if k in names})
