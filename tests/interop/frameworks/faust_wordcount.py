"""A Faust word counter, as Faust's own examples write one: an agent reads words (keyed by the
word) and counts them in a Table, whose changelog topic Faust creates compacted; after each
update it publishes the word's new count to an output topic.

Run: ``python faust_wordcount.py worker`` with FAUST_BOOTSTRAP (host:port) and FAUST_DATADIR.
The in-memory store keeps nothing on disk, so a restarted worker rebuilds the table from the
changelog alone.
"""

import os

import faust

app = faust.App(
    "wordcount",
    broker=f"kafka://{os.environ['FAUST_BOOTSTRAP']}",
    datadir=os.environ["FAUST_DATADIR"],
    store="memory://",
    topic_partitions=2,
    topic_replication_factor=1,
    table_standby_replicas=0,
    web_enabled=False,
    consumer_auto_offset_reset="earliest",
    broker_commit_interval=0.5,
    broker_session_timeout=6.0,
    broker_heartbeat_interval=0.5,
    broker_request_timeout=15.0,
)
words = app.topic("words", key_type=str, value_type=str)
counts_out = app.topic("word-counts", key_type=str, value_type=int)
counts = app.Table("counts", default=int)


@app.agent(words)
async def count_words(stream):
    async for word in stream:
        counts[word] += 1
        await counts_out.send(key=word, value=counts[word])


if __name__ == "__main__":
    app.main()
