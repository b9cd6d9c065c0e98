"""A small blocking Kafka client on our codec, no trio: one socket per node. The ``groupbroker``
admin commands, the launchers' readiness checks, benchmarks and tests talk to any Kafka broker
(ours or Apache Kafka) through it."""
