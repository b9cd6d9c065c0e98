"""A FastStream service, as FastStream's own examples write one: a KafkaBroker with a subscriber
in a consumer group whose return value a publisher sends on to an output topic.

Run: ``python faststream_shout.py BOOTSTRAP``. It acknowledges (commits) each message after
handling it (AckPolicy.ACK), so a restarted service resumes right after the last one handled.
SIGTERM stops it cleanly (FastStream's own signal handling).
"""

import asyncio
import sys

from faststream import AckPolicy, FastStream
from faststream.kafka import KafkaBroker

broker = KafkaBroker(sys.argv[1], request_timeout_ms=15000, retry_backoff_ms=200)
app = FastStream(broker)


@broker.subscriber("orders", group_id="shouter", auto_offset_reset="earliest",
                   ack_policy=AckPolicy.ACK, session_timeout_ms=6000,
                   heartbeat_interval_ms=500, max_poll_interval_ms=30000)
@broker.publisher("shouted")
async def shout(order: str) -> str:
    return order.upper()


if __name__ == "__main__":
    asyncio.run(app.run())
