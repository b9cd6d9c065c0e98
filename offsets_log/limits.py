"""Limits of the log format, apart from the codec (so settings can check against them
without loading it)."""

#: Far above any real record (Kafka's default max.message.bytes is ~1 MiB); a larger length
#: field is garbage, and refusing it keeps a torn length from swallowing the rest of a file.
MAX_FRAME = 64 << 20
