"""A stand-in for Apache Kafka's ``bin/kafka-topics.sh``, for librdkafka's test runner.

A few of librdkafka's tests (0045, 0052, 0077) shell out to ``$KAFKA_PATH/bin/kafka-topics.sh
--bootstrap-server $BROKERS ...`` to create a topic with configs, add partitions or delete a
topic. Kafka's own tool does that through the Admin API (CreateTopics, CreatePartitions,
DeleteTopics); this script does the same with confluent-kafka's AdminClient, so those tests
run without a Java installation. It understands only the options those tests pass.

Usage: ``python librdkafka_kafka_topics.py --bootstrap-server H:P (--create|--delete|--alter)
--topic T [--partitions N] [--replication-factor N] [--config k=v ...]``; exit status 0 when
the broker accepted the request, 1 (with the error on stderr) otherwise.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-topics.sh")
    parser.add_argument("--bootstrap-server", required=True)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true")
    action.add_argument("--delete", action="store_true")
    action.add_argument("--alter", action="store_true")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--replication-factor", type=int, default=-1)
    parser.add_argument("--config", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)

    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": args.bootstrap_server})
    if args.create:
        configs = dict(item.split("=", 1) for item in args.config)
        futures = admin.create_topics([NewTopic(args.topic, args.partitions or -1,
                                                args.replication_factor, config=configs)])
    elif args.delete:
        futures = admin.delete_topics([args.topic])
    else:
        if args.partitions is None:
            parser.error("--alter needs --partitions")
        futures = admin.create_partitions([NewPartitions(args.topic, args.partitions)])
    try:
        futures[args.topic].result(30)
    # Safe to catch broadly: whatever the failure (KafkaException, a timeout), the caller only
    # needs a non-zero exit status and the message, as from Kafka's own tool.
    except Exception as e:
        print(f"Error while executing topic command : {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
