"""Group members for test_report_pipeline.py with a predictable number of rebalances.

kafka-python 3.0.12 keeps a snapshot of the subscribed topics' partitions and, when it led a
rebalance with a snapshot older than the metadata it has, rejoins right after (a leader rejoin
the scenario did not ask for). The snapshot is only refreshed by the next metadata update, so
:func:`subscribe` rebuilds it from the metadata the client already holds.

Run as a script, this is one member in its own process (so a test can freeze it with SIGSTOP):
it polls, commits after every batch and prints JSON lines: ``{"ev": "commit", "member",
"generation", "records" (committed so far), "t"}``.
"""

from __future__ import annotations

import json
import sys
import time


def subscribe(consumer, topic: str) -> None:
    """Subscribe with an up-to-date partition snapshot (no extra leader rejoin)."""
    consumer.partitions_for_topic(topic)
    consumer.subscribe([topic])
    consumer._coordinator._handle_metadata_update(consumer._client.cluster)


def main(bootstrap: str, group: str, topic: str, client_id: str, session_ms: int, max_poll_ms: int) -> int:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                             enable_auto_commit=False, auto_offset_reset="earliest",
                             session_timeout_ms=session_ms, heartbeat_interval_ms=500,
                             max_poll_interval_ms=max_poll_ms)
    subscribe(consumer, topic)
    records = 0
    while True:
        batch = consumer.poll(timeout_ms=200)
        if not batch:
            continue
        consumer.commit()
        records += sum(len(r) for r in batch.values())
        generation = consumer._coordinator._generation
        sys.stdout.write(json.dumps({"ev": "commit", "member": generation.member_id,
                                     "generation": generation.generation_id, "records": records,
                                     "t": time.time()}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])))
