"""What the share-group recipes share: a share group's configs set, records produced, and a
confluent-kafka ShareConsumer (librdkafka's share consumer) made for it."""

from __future__ import annotations

from recipe import make_topic


def share_group(bootstrap: str, topic: str, group: str, records: int, **configs: str) -> None:
    """A one-partition topic with ``records`` records (values ``r0``...) and the share group's
    configs (``share_delivery_count_limit="3"`` sets share.delivery.count.limit); the group
    reads from the start of the log."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    make_topic(bootstrap, topic, 1)
    wanted = {"share.auto.offset.reset": "earliest", **{k.replace("_", "."): v for k, v in configs.items()}}
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in wanted.items()])
    admin = AdminClient({"bootstrap.servers": bootstrap})        # kept alive until it answers
    admin.incremental_alter_configs([resource])[resource].result(15)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce(topic, value=b"r%d" % i, partition=0)
    producer.flush(10)


def share_consumer(bootstrap: str, group: str, topic: str, explicit: bool = True):
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit" if explicit else "implicit"})
    consumer.subscribe([topic])
    return consumer
