"""The group APIs at run time: the router that sends each request to its coordinator shard,
and the trio task per shard that drives the pure coordinator and makes its records durable."""
