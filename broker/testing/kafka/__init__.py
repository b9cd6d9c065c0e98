"""Apache Kafka itself, pinned and run from its Maven artefacts: the oracle the test suite
compares groupbroker with, and the backend a user's tests can switch to
(``pytest --groupbroker-backend=kafka``). Standard library only, like the broker launcher."""

from broker.testing.kafka.artefacts import KAFKA_VERSION, KafkaUnavailable, kafka_classpath
from broker.testing.kafka.process import KafkaProcess

__all__ = ["KAFKA_VERSION", "KafkaProcess", "KafkaUnavailable", "kafka_classpath"]
