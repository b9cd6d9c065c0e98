"""A cluster of broker nodes in one process: who leads each partition and coordinates each shard."""
