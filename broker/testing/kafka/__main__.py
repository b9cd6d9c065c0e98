"""``python -m broker.testing.kafka``: fetch the pinned Kafka's jars into the cache, print where."""

import sys

from broker.testing.kafka.artefacts import KafkaUnavailable, kafka_classpath

try:
    print(kafka_classpath())
except KafkaUnavailable as e:
    sys.exit(f"groupbroker: {e}")
