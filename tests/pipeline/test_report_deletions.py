"""The report forgets what was deleted: a group removed by DeleteGroups and a deleted topic leave
no lag_status rows behind, while the groups and topics still there keep theirs."""

from __future__ import annotations

from broker.testing.launcher import BrokerProcess
from tests.support.processes import import_client
from pipeline.job import build_tables

kafka = import_client("kafka")
from kafka.admin import KafkaAdminClient, NewTopic  # noqa: E402
from kafka.structs import OffsetAndMetadata, TopicPartition  # noqa: E402


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """A manual commit (a simple group, no members), as kafka-python's commit() sends it."""
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(offset, "", -1)})
    consumer.close()


def test_deleted_groups_and_topics_leave_no_lag_rows(tmp_path, spark):
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log",
                           {"groupbroker.journal.commit.interval.ms": 0}).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        admin.create_topics([NewTopic("kept", 1, 1), NewTopic("dropped", 1, 1)])
        producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap)
        for topic in ("kept", "dropped"):
            for i in range(6):
                producer.send(topic, b"%d" % i, partition=0)
        producer.flush()
        producer.close()
        commit(broker.bootstrap, "stays", "kept", 2)
        commit(broker.bootstrap, "goes", "kept", 3)
        commit(broker.bootstrap, "on-dropped", "dropped", 4)
        admin.delete_groups(["goes"])
        admin.delete_topics(["dropped"])
        commit(broker.bootstrap, "back", "kept", 1)
        admin.delete_groups(["back"])
        commit(broker.bootstrap, "back", "kept", 5)           # committed to again: it is back
        admin.close()
        assert broker.stop() == 0
    finally:
        broker.kill()
    built, events = build_tables(spark, [str(tmp_path / "data")])
    try:
        rows = {(r["group"], r["topic"]): r for r in built["lag_status"].collect()}
        assert set(rows) == {("stays", "kept"), ("back", "kept")}
        assert (rows[("stays", "kept")]["current_lag"], rows[("back", "kept")]["current_lag"]) == (4, 1)
        kinds = {r["event"] for r in events.collect()}
        assert {"group_deleted", "topic_deleted"} <= kinds
    finally:
        events.unpersist()
