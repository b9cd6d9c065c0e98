"""ListOffsets by time answers with the record, as Kafka's time index does, for real clients:
kafka-python's offsets_for_times and confluent-kafka's AdminClient.list_offsets (max timestamp)."""

from __future__ import annotations

from tests.support.processes import import_client

kafka = import_client("kafka")
ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient, OffsetSpec  # noqa: E402

T0 = 1_700_000_000_000


def produce_one_batch(bootstrap: str, topic: str, timestamps: list[int]) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, linger_ms=500, batch_size=1 << 20)
    for i, ts in enumerate(timestamps):
        producer.send(topic, b"v%d" % i, partition=0, timestamp_ms=ts)
    producer.flush()
    producer.close()


def test_offsets_for_times_finds_the_record_inside_a_batch(broker):
    produce_one_batch(broker.bootstrap, "timed", [T0, T0 + 10, T0 + 20])
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = kafka.TopicPartition("timed", 0)
    try:
        found = consumer.offsets_for_times({tp: T0 + 10})[tp]
        assert (found.offset, found.timestamp) == (1, T0 + 10)
        found = consumer.offsets_for_times({tp: T0 + 11})[tp]
        assert (found.offset, found.timestamp) == (2, T0 + 20)
        assert consumer.offsets_for_times({tp: T0 + 21})[tp] is None
    finally:
        consumer.close()


def test_max_timestamp_names_the_record_holding_it(broker):
    produce_one_batch(broker.bootstrap, "maxed", [T0 + 5, T0 + 50, T0 + 7])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    tp = ck.TopicPartition("maxed", 0)
    result = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(10)
    assert (result.offset, result.timestamp) == (1, T0 + 50)
