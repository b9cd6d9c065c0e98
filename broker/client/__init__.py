"""Our Kafka client: :class:`protocol.client.ClientSession` over a transport — a blocking
socket for command-line tools and examples (no trio), a trio stream for tests."""
