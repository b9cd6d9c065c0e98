"""A producer and a consumer-group member for trying groupbroker, e.g. in docker-compose.

    python examples/demo.py produce [--count N] [--interval S]   # N=0: forever
    python examples/demo.py consume [--group G] [--count N]      # N=0: forever

The broker address comes from --bootstrap-server, else $BOOTSTRAP_SERVERS, else
127.0.0.1:9092. Both create the topic if it is missing (3 partitions, so several consumers
share it: ``docker-compose up --scale consumer=3``), and wait up to --wait seconds for the
broker to answer. The consumer commits after each batch; SIGTERM makes it leave the group cleanly.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError


def client_config(args) -> dict:
    """kafka-python 3 retries the bootstrap for bootstrap_timeout_ms: the broker may be starting."""
    return {"bootstrap_servers": args.bootstrap_server, "bootstrap_timeout_ms": int(args.wait * 1000)}


def ensure_topic(args) -> None:
    admin = KafkaAdminClient(**client_config(args))
    try:
        admin.create_topics([NewTopic(args.topic, args.partitions, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        admin.close()


def produce(args, stopping) -> int:
    producer = KafkaProducer(acks="all", **client_config(args))
    sent = 0
    try:
        while not stopping() and (args.count == 0 or sent < args.count):
            value = f"message {sent} at {time.strftime('%H:%M:%S')}"
            meta = producer.send(args.topic, value.encode(), key=str(sent).encode()).get(30)
            print(f"produced {meta.topic}[{meta.partition}]@{meta.offset}: {value}", flush=True)
            sent += 1
            if args.interval:
                time.sleep(args.interval)
    finally:
        producer.close()
    return 0


def consume(args, stopping) -> int:
    consumer = KafkaConsumer(group_id=args.group, client_id=args.client_id, enable_auto_commit=False,
                             auto_offset_reset="earliest", **client_config(args))
    consumer.subscribe([args.topic])
    seen = 0
    deadline = time.monotonic() + args.timeout if args.timeout else None
    try:
        while not stopping() and (args.count == 0 or seen < args.count):
            if deadline is not None and time.monotonic() > deadline:
                print(f"timed out after {args.timeout}s with {seen} of {args.count} messages", flush=True)
                return 1
            batch = consumer.poll(timeout_ms=500)
            generation = consumer.group_metadata().generation_id
            for tp, records in batch.items():
                for record in records:
                    print(f"consumed {tp.topic}[{tp.partition}]@{record.offset} "
                          f"(group {args.group}, generation {generation}): {record.value.decode()}",
                          flush=True)
                    seen += 1
            if batch:
                consumer.commit()
    finally:
        consumer.close()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("produce", "consume"))
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT",
                        default=os.environ.get("BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    parser.add_argument("--topic", default="demo")
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--group", default="demo-group")
    parser.add_argument("--client-id", default=os.environ.get("HOSTNAME", "demo"))
    parser.add_argument("--count", type=int, default=0, help="stop after N messages (0: never)")
    parser.add_argument("--interval", type=float, default=1.0, help="produce: seconds between messages")
    parser.add_argument("--timeout", type=float, default=0, help="consume: give up after S seconds")
    parser.add_argument("--wait", type=float, default=60, help="seconds to wait for the broker")
    args = parser.parse_args(argv)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    ensure_topic(args)
    return (produce if args.mode == "produce" else consume)(args, lambda: bool(stop))


if __name__ == "__main__":
    sys.exit(main())
