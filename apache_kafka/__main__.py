"""``python -m apache_kafka``: fetch the pinned Kafka's jars into the cache, print where."""

import sys

from apache_kafka.artefacts import KafkaUnavailable, kafka_classpath

try:
    print(kafka_classpath())
except KafkaUnavailable as e:
    sys.exit(f"groupbroker: {e}")
