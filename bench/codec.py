"""Codec speed: groupbroker's compiled construct codec next to kafka-python 3.0.12's, same messages, same run.

Prints µs per decode and per encode of each message for both codecs and the
ratio ours / kafka-python (below 1.0 means we are faster). Run with
``make bench`` or ``.venv/bin/python bench/codec.py [--quick]``.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import struct
import sys
import timeit
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import kafka.protocol  # noqa: E402
from crc32c import crc32c  # noqa: E402

from protocol.api_keys import ApiKey
from protocol.messages import REQUESTS, RESPONSES  # noqa: E402


def kafka_python_classes() -> dict[str, type]:
    """kafka-python's message classes by Kafka message name (e.g. "JoinGroupRequest")."""
    found = {}
    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for obj in vars(module).values():
            json = getattr(obj, "_json", None)
            if isinstance(obj, type) and isinstance(json, dict) and json.get("type") in ("request", "response"):
                found.setdefault(json["name"], obj)
    return found


def record_batches(total: int, batch_size: int = 64 * 1024) -> bytes:
    """Valid v2 batches (CRC-32C correct) adding up to ``total`` bytes."""
    out = []
    base = 0
    while sum(map(len, out)) < total:
        payload = b"r" * (batch_size - 61)
        body = struct.pack(">hiqqqhii", 0, 99, 0, 0, -1, -1, -1, 100) + payload
        head = struct.pack(">qiib", base, 9 + len(body), 0, 2)
        out.append(head + struct.pack(">I", crc32c(body)) + body)
        base += 100
    return b"".join(out)


def samples():
    """(label, declaration, version, value)."""
    hb = REQUESTS[ApiKey.HEARTBEAT]
    jg = REQUESTS[ApiKey.JOIN_GROUP]
    proto = jg.cls.JoinGroupRequestProtocol
    protocols = (proto(name="range", metadata=b"\x00\x01" + b"m" * 40),
                 proto(name="cooperative-sticky", metadata=b"\x00\x01" + b"s" * 60))
    join = dict(group_id="orders-consumers", session_timeout_ms=45000, rebalance_timeout_ms=300000,
                member_id="consumer-orders-1-5b0d7c2a-4f0e-4c47-9d1a-2f1f8f4e9a11",
                group_instance_id=None, protocol_type="consumer", protocols=protocols)
    oc = REQUESTS[ApiKey.OFFSET_COMMIT]
    ocp = oc.cls.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    commit = oc.cls(group_id="orders-consumers", generation_id_or_member_epoch=7,
                    member_id=join["member_id"], group_instance_id=None,
                    topics=(oc.cls.OffsetCommitRequestTopic(name="orders", partitions=tuple(
                        ocp(partition_index=i, committed_offset=1000 + i, committed_leader_epoch=3,
                            committed_metadata="") for i in range(10))),))
    md = RESPONSES[ApiKey.METADATA]
    T = md.cls.MetadataResponseTopic
    P = T.MetadataResponsePartition
    metadata = md.cls(
        throttle_time_ms=0, cluster_id="groupbroker", controller_id=1,
        brokers=(md.cls.MetadataResponseBroker(node_id=1, host="127.0.0.1", port=9092, rack=None),),
        topics=tuple(T(error_code=0, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), is_internal=False,
                       partitions=tuple(P(error_code=0, partition_index=p, leader_id=1, leader_epoch=0,
                                          replica_nodes=(1,), isr_nodes=(1,), offline_replicas=())
                                        for p in range(6)))
                     for t in range(20)))
    fr = RESPONSES[ApiKey.FETCH]
    FT = fr.cls.FetchableTopicResponse
    fetch = fr.cls(throttle_time_ms=0, error_code=0, session_id=0, responses=(FT(
        topic="orders", partitions=(FT.PartitionData(partition_index=0, error_code=0, high_watermark=1600,
                                                      last_stable_offset=1600, log_start_offset=0,
                                                      records=record_batches(1 << 20)),)),))
    return [
        ("Heartbeat v4 request", hb, 4, hb.cls(group_id="orders-consumers", generation_id=7,
                                              member_id=join["member_id"])),
        ("JoinGroup v5 request", jg, 5, jg.cls(**join)),
        ("JoinGroup v9 request", jg, 9, jg.cls(**join, reason="rebalance")),
        ("OffsetCommit v8 request, 10 partitions", oc, 8, commit),
        ("Metadata v12 response, 20 topics x 6 partitions", md, 12, metadata),
        ("Fetch v12 response, 1 MiB of record batches", fr, 12, fetch),
    ]


def per_call_us(fn, budget: float) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, int(number * budget / 0.2))
    return min(timer.repeat(repeat=5, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="shorter timing runs")
    args = parser.parse_args()
    budget = 0.05 if args.quick else 0.2
    theirs = kafka_python_classes()
    header = (f"{'message':<48} {'op':<6} {'ours µs':>9} {'kafka-python µs':>16} {'ratio':>6}")
    print(header)
    print("-" * len(header))
    worst = 0.0
    for label, msg, version, value in samples():
        codec = msg.codec(version)
        data = codec.encode(value)
        assert codec.decode(data) == value
        kcls = theirs[msg.name]
        kvalue = kcls.decode(data, version=version)
        kvalue._header = None            # kafka-python reads this attribute when encoding
        assert bytes(kvalue.encode(version=version)) == data, f"{label}: codecs disagree on bytes"
        encode = codec.encode_parts if msg.name == "FetchResponse" else codec.encode
        rows = [("decode", lambda: codec.decode(data), lambda: kcls.decode(data, version=version)),
                ("encode", lambda: encode(value), lambda: kvalue.encode(version=version))]
        for op, ours, kp in rows:
            a, b = per_call_us(ours, budget), per_call_us(kp, budget)
            worst = max(worst, a / b)
            print(f"{label:<48} {op:<6} {a:>9.2f} {b:>16.2f} {a / b:>6.2f}")
    print(f"\nworst ratio: {worst:.2f} (bar <= 1.5, goal <= 1.0)")


if __name__ == "__main__":
    main()
