"""The group APIs at run time: the router that sends each request to its coordinator shard,
the trio task per shard that drives the pure coordinator and writes its records, and the
broker's flusher that fsyncs them as Kafka's log.flush.* settings say."""
