"""The report's share-group section: a member that accepts, releases and rejects records, and
another whose locks run out, as the journal records them and share_members counts them."""

from __future__ import annotations

import time

from broker.testing.launcher import TEST_DEFAULTS, BrokerProcess
from pipeline.job import build_tables
from pipeline.report import gather
from tests.support.processes import import_client

ck = import_client("confluent_kafka")
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402


def test_share_members(tmp_path, spark):
    broker = BrokerProcess(tmp_path / "data", tmp_path / "broker.log", TEST_DEFAULTS).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("work", 1, 1)])["work"].result(15)
        resource = ConfigResource(ConfigResource.Type.GROUP, "workers", incremental_configs=[
            ConfigEntry(n, v, incremental_operation=AlterConfigOpType.SET)
            for n, v in (("share.auto.offset.reset", "earliest"), ("share.record.lock.duration.ms", "1000"))])
        admin.incremental_alter_configs([resource])[resource].result(15)
        producer = ck.Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            producer.produce("work", value=b"%d" % i, partition=0)
        producer.flush(10)
        silent = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "workers",
                                   "client.id": "silent", "share.acknowledgement.mode": "explicit"})
        silent.subscribe(["work"])
        held, deadline = [], time.monotonic() + 15
        while not held and time.monotonic() < deadline:
            held = [m for m in silent.poll(0.3) if m.error() is None]
        worker = ck.ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "workers",
                                   "client.id": "worker", "share.acknowledgement.mode": "explicit"})
        worker.subscribe(["work"])
        done, deadline = 0, time.monotonic() + 15
        while done < 10 and time.monotonic() < deadline:
            for m in worker.poll(0.3):
                if m.error() is None:
                    kind = ck.AcknowledgeType.REJECT if m.value() == b"0" else ck.AcknowledgeType.ACCEPT
                    worker.acknowledge(m, kind)
                    done += 1
            worker.commit_sync()
        worker.close()
        silent.close()
        assert broker.stop() == 0
    finally:
        broker.kill()
    built, events = build_tables(spark, [str(tmp_path / "data")])
    try:
        rows = built["share_members"].collect()
        expired = [r for r in rows if r["member"] is None]
        assert len(expired) == 1 and expired[0]["lock_expired"] == 10, rows
        workers = [r for r in rows if r["member"] is not None and r["accepted"]]
        assert len(workers) == 1, rows
        w = workers[0]
        assert (w["delivered"], w["redelivered"], w["accepted"], w["rejected"]) == (10, 10, 9, 1), w
        assert w["redelivery_rate"] == 1.0 and w["records_per_s"] > 0
        page = gather(built, events)
        assert len(page["share"]) == len(rows)
    finally:
        events.unpersist()
