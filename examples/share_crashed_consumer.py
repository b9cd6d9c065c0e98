"""A share consumer that crashes holding records (KIP-932): the broker keeps what it acquired
locked for the group's lock duration (share.record.lock.duration.ms, 2 s here), then the
records are available again and another member gets them, with delivery count 2.

Member A polls once and then stops (a crash: no acknowledgement, no close); member B of the same
share group acknowledges what it gets.
"""

import time

from recipe import NotReproduced, result, run, say, unique
from share_recipe import share_consumer, share_group

LOCK_MS = 2000


def recipe(broker) -> None:
    from confluent_kafka import AcknowledgeType

    topic, group = unique("crash"), unique("crash-group")
    share_group(broker.bootstrap, topic, group, 4, share_record_lock_duration_ms=str(LOCK_MS))
    crashed = share_consumer(broker.bootstrap, group, topic)
    held, deadline = [], time.monotonic() + 20
    while not held and time.monotonic() < deadline:
        held = [m.value().decode() for m in crashed.poll(0.3) if m.error() is None]
    taken_at = time.monotonic()
    say(f"  client| A acquired {held} and stops responding")
    other = share_consumer(broker.bootstrap, group, topic)
    again, deadline = {}, time.monotonic() + 20
    try:
        while len(again) < len(held) and time.monotonic() < deadline:
            for m in other.poll(0.3):
                if m.error() is None:
                    again[m.value().decode()] = (m.delivery_count(), time.monotonic() - taken_at)
                    other.acknowledge(m, AcknowledgeType.ACCEPT)
            other.commit_sync()
    finally:
        other.close()
        crashed.close()
    if not held or sorted(again) != sorted(held) or any(count != 2 for count, _ in again.values()):
        raise NotReproduced(f"A held {held}; B got {again}")
    after = min(t for _, t in again.values())
    result("REDELIVERY AFTER LOCK EXPIRY", f"B got A's {len(held)} records with delivery count 2, "
           f"{after:.1f} s after A took them (lock duration {LOCK_MS / 1000:.0f} s)",
           "records a member acquires stay locked to it until it acknowledges them or its lock "
           "(share.record.lock.duration.ms) runs out; then the broker makes them available again",
           "acknowledge (or RELEASE) what you cannot process promptly; a shorter lock duration "
           "redelivers a crashed member's records sooner")


if __name__ == "__main__":
    run(recipe, "A share consumer crashes holding records: redelivered after the lock duration")
