"""Kafka's command-line tools, redone in Python over :mod:`kafka_client` (blocking sockets, no
trio, no server): ``groups`` takes kafka-consumer-groups.sh's and kafka-share-groups.sh's
options and prints their tables, against any Kafka broker."""
