"""Transaction coordinator settings under Kafka's broker-config names, with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields

from coordinator.config import KafkaNamed


@dataclass(frozen=True, slots=True)
class TransactionConfig(KafkaNamed):
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
