"""A Quix Streams application, as Quix's own examples write one: a StreamingDataFrame over a
topic of words (keyed by the word) keeps a running count per key in its state and sends each
new count to an output topic.

Run: ``python quix_counter.py BOOTSTRAP STATE_DIR``. The state lives in RocksDB under STATE_DIR
and in a changelog topic Quix creates; a run on an empty STATE_DIR rebuilds it from the
changelog. SIGTERM stops it cleanly (Quix's own signal handling).
"""

import sys

from quixstreams import Application

app = Application(broker_address=sys.argv[1], consumer_group="counter", state_dir=sys.argv[2],
                  auto_offset_reset="earliest", commit_interval=0.5, loglevel="DEBUG",
                  request_timeout=15,
                  consumer_extra_config={"session.timeout.ms": 6000,
                                         "heartbeat.interval.ms": 500})
words = app.topic("quix-words", key_deserializer="str", value_deserializer="str")
counts = app.topic("quix-counts", key_serializer="str", value_serializer="json")


def count(word: str, state) -> dict:
    seen = state.get("count", 0) + 1
    state.set("count", seen)
    return {"word": word, "count": seen}


app.dataframe(words).apply(count, stateful=True).to_topic(counts)

if __name__ == "__main__":
    app.run()
