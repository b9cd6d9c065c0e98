"""Our Kafka client over a trio stream, for tests (:class:`protocol.client.ClientSession`; the blocking
one for command-line tools is kafka_client/blocking.py)."""
