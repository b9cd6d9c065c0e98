"""A poison message in a share group (KIP-932): a record the application can never process is
released on each delivery, redelivered with a higher delivery count, and archived by the broker
once it reaches the group's delivery limit (share.delivery.count.limit, 3 here): it is never
delivered again, and the records behind it flow on.

A confluent-kafka ShareConsumer in explicit acknowledgement mode accepts every record but
``r2``, which it releases each time it sees it.
"""

import time

from recipe import NotReproduced, result, run, say, unique
from share_recipe import share_consumer, share_group

LIMIT = 3


def recipe(broker) -> None:
    from confluent_kafka import AcknowledgeType

    topic, group = unique("poison"), unique("poison-group")
    share_group(broker.bootstrap, topic, group, 5, share_delivery_count_limit=str(LIMIT))
    consumer = share_consumer(broker.bootstrap, group, topic)
    poison, accepted = [], set()
    deadline = time.monotonic() + 20
    try:
        while (len(accepted) < 4 or len(poison) < LIMIT) and time.monotonic() < deadline:
            for m in consumer.poll(0.3):
                if m.error() is not None:
                    continue
                if m.value() == b"r2":
                    poison.append(m.delivery_count())
                    consumer.acknowledge(m, AcknowledgeType.RELEASE)
                    say(f"  client| r2 delivered (delivery count {m.delivery_count()}): released")
                else:
                    accepted.add(m.value())
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
            consumer.commit_sync()
        again = [m for m in consumer.poll(2.5) if m.error() is None]
    finally:
        consumer.close()
    if poison != list(range(1, LIMIT + 1)) or again:
        raise NotReproduced(f"r2 delivered with counts {poison}, then {len(again)} more record(s)")
    result("POISON MESSAGE ARCHIVED", f"r2 was delivered {LIMIT} times (delivery counts "
           f"{', '.join(map(str, poison))}) and then never again; the other 4 records were accepted",
           "a released record goes back to the share-partition with its delivery count; at "
           "share.delivery.count.limit the broker archives it instead",
           "REJECT a record the application can never process (archived at once), or raise "
           "share.delivery.count.limit for records that may succeed later")


if __name__ == "__main__":
    run(recipe, "A poison message in a share group, archived at the delivery limit")
