"""Read brokers' data dirs into DataFrames: the offsets logs and the group event journals.

Offsets logs are read by offsets_log's own reader (:func:`offsets_log.tools.records`), one
Spark task per shard, so nothing here knows their format; the journal is JSON lines, read by
Spark's JSON reader with a fixed schema. Every row carries ``source``: the data dir as given,
since two brokers' groups of the same name are different groups.
"""

from __future__ import annotations

import logging
import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from offsets_log.errors import RecordError
from log_store.fs import RealFS
from offsets_log.journal import JOURNAL_DIR, JOURNAL_SUFFIX
from offsets_log.records import GroupMetadata, GroupMetadataTombstone, OffsetCommit, OffsetCommitTombstone
from offsets_log.tools import records, shards

log = logging.getLogger("groupbroker.pipeline")

OFFSETS_SCHEMA = T.StructType([
    T.StructField("source", T.StringType()),
    T.StructField("shard", T.IntegerType()),
    T.StructField("log_offset", T.LongType()),
    T.StructField("append_ms", T.LongType()),
    T.StructField("kind", T.StringType()),          # commit | commit_tombstone | group | group_tombstone
    T.StructField("group", T.StringType()),
    T.StructField("topic", T.StringType()),
    T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()),
    T.StructField("leader_epoch", T.IntegerType()),
    T.StructField("metadata", T.StringType()),
    T.StructField("commit_ms", T.LongType()),
    T.StructField("expire_ms", T.LongType()),
    T.StructField("generation", T.IntegerType()),
    T.StructField("protocol_type", T.StringType()),
    T.StructField("protocol", T.StringType()),
    T.StructField("leader", T.StringType()),
    T.StructField("members", T.ArrayType(T.StringType())),
])

JOURNAL_SCHEMA = T.StructType([
    T.StructField("t", T.LongType()),
    T.StructField("seq", T.LongType()),
    T.StructField("event", T.StringType()),
    T.StructField("shard", T.IntegerType()),
    T.StructField("group", T.StringType()),
    T.StructField("generation", T.IntegerType()),
    T.StructField("member", T.StringType()),
    T.StructField("cause", T.StringType()),
    T.StructField("reason", T.StringType()),
    T.StructField("detail", T.StringType()),
    T.StructField("state", T.StringType()),
    T.StructField("members", T.ArrayType(T.StringType())),
    T.StructField("leader", T.StringType()),
    T.StructField("protocol_type", T.StringType()),
    T.StructField("protocol", T.StringType()),
    T.StructField("duration_ms", T.LongType()),
    T.StructField("instance_id", T.StringType()),
    T.StructField("client_id", T.StringType()),
    T.StructField("client_host", T.StringType()),
    T.StructField("replaced_by", T.StringType()),
    T.StructField("replaces", T.StringType()),
    T.StructField("api", T.StringType()),
    T.StructField("error", T.StringType()),
    T.StructField("generation_sent", T.IntegerType()),
    # offsets_committed: per topic, its partitions and their offsets (parallel arrays)
    T.StructField("offsets", T.ArrayType(T.StructType([
        T.StructField("topic", T.StringType()), T.StructField("partitions", T.ArrayType(T.IntegerType())),
        T.StructField("offsets", T.ArrayType(T.LongType()))]))),
    T.StructField("commits", T.IntegerType()),
    T.StructField("topic", T.StringType()),
    T.StructField("partition", T.IntegerType()),
    T.StructField("offset", T.LongType()),
    T.StructField("log_start", T.LongType()),
    # KIP-848 consumer groups: group_epoch_bumped, target_assignment, member_reconciled
    T.StructField("epoch", T.IntegerType()),
    T.StructField("assignor", T.StringType()),
    T.StructField("previous_epoch", T.IntegerType()),
    T.StructField("target_epoch", T.IntegerType()),
    # KIP-1071 streams groups: a target_assignment's tasks, per member
    T.StructField("tasks", T.MapType(T.StringType(), T.StructType([
        T.StructField("active", T.ArrayType(T.StringType())),
        T.StructField("standby", T.ArrayType(T.StringType()))]))),
    # KIP-932 share groups: share_delivered, share_acknowledged, share_locks_expired
    *[T.StructField(name, T.LongType()) for name in ("records", "redelivered", "accepted", "released",
                                                     "rejected", "archived")],
    T.StructField("_corrupt", T.StringType()),
])
#: the events as :func:`journal_events` returns them, with ``target_members``: the number of
#: members a ``target_assignment`` assigned
EVENTS_SCHEMA = T.StructType(
    [f for f in JOURNAL_SCHEMA.fields if f.name != "_corrupt"]
    + [T.StructField("target_members", T.IntegerType()), T.StructField("source", T.StringType())])


def _shard_rows(task: tuple[str, int]):
    """The rows of one shard's offsets log (runs on an executor)."""
    source, shard = task
    skipped = 0
    for frame, record in records(source, shard):
        base = (source, shard, frame.offset, frame.append_ms)
        if isinstance(record, RecordError):
            skipped += 1
        elif isinstance(record, OffsetCommit):
            yield base + ("commit", record.group, record.topic, record.partition, record.offset,
                          record.leader_epoch, record.metadata, record.commit_ts, record.expire_ts,
                          None, None, None, None, None)
        elif isinstance(record, OffsetCommitTombstone):
            yield base + ("commit_tombstone", record.group, record.topic, record.partition) + (None,) * 10
        elif isinstance(record, GroupMetadata):
            v = record.value
            yield base + ("group", record.group) + (None,) * 7 + (
                v.generation, v.protocol_type, v.protocol, v.leader, [m.member_id for m in v.members])
        elif isinstance(record, GroupMetadataTombstone):
            yield base + ("group_tombstone", record.group) + (None,) * 12
    if skipped:
        log.warning("%s shard %d: %d records of unknown type skipped", source, shard, skipped)


def offsets_records(spark: SparkSession, data_dirs: list[str]) -> DataFrame:
    """Every record of every shard of every data dir (read on the executors)."""
    tasks = [(d, n) for d in data_dirs for n in shards(d, RealFS())]
    if not tasks:
        return spark.createDataFrame([], OFFSETS_SCHEMA)
    slices = min(len(tasks), 4 * spark.sparkContext.defaultParallelism)
    rdd = spark.sparkContext.parallelize(tasks, slices).flatMap(_shard_rows)
    return spark.createDataFrame(rdd, OFFSETS_SCHEMA, verifySchema=False)


def journal_events(spark: SparkSession, data_dirs: list[str], since_ms: int | None = None) -> DataFrame:
    """Every journal event of every data dir (from ``since_ms`` on), cached: the tables all
    read it. Torn or corrupt lines are dropped with a warning."""
    frames = []
    for d in data_dirs:
        directory = os.path.join(d, JOURNAL_DIR)
        paths = sorted(os.path.join(directory, n) for n in os.listdir(directory)
                       if n.endswith(JOURNAL_SUFFIX)) if os.path.isdir(directory) else []
        if not paths:
            log.warning("%s: no journal; the tables built from it will be empty for this dir", d)
            continue
        frames.append(spark.read.schema(JOURNAL_SCHEMA)
                      .option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", "_corrupt")
                      .json(paths).withColumn("source", F.lit(d)))
    if not frames:
        return spark.createDataFrame([], EVENTS_SCHEMA)
    raw = frames[0]
    for more in frames[1:]:
        raw = raw.unionByName(more)
    bad = raw.filter(F.col("_corrupt").isNotNull() | F.col("event").isNull())
    torn = bad.count()
    if torn:
        sample = [r["_corrupt"] for r in bad.select("_corrupt", "event").limit(3).collect()]
        log.warning("journal: %d torn or corrupt line(s) skipped, e.g. %r", torn, sample)
    events = _split_members(raw.filter(F.col("_corrupt").isNull() & F.col("event").isNotNull()))
    if since_ms is not None:
        events = events.filter(F.col("t") >= since_ms)
    return events.cache()


def _split_members(raw: DataFrame) -> DataFrame:
    """The journal's columns, plus ``target_members``: how many members a
    ``target_assignment`` assigned."""
    count = F.when(F.col("event") == "target_assignment", F.size("members")).alias("target_members")
    return raw.select(*[count if f.name == "target_members" else F.col(f.name)
                        for f in EVENTS_SCHEMA.fields])


def commits(events: DataFrame) -> DataFrame:
    """One row per partition of every ``offsets_committed`` line."""
    per_topic = events.filter(F.col("event") == "offsets_committed").select(
        "source", "group", "t", "seq", "generation", "member", F.explode("offsets").alias("o"))
    per_partition = per_topic.select(
        "source", "group", "t", "seq", "generation", "member", F.col("o.topic").alias("topic"),
        F.explode(F.arrays_zip("o.partitions", "o.offsets")).alias("p"))
    return per_partition.select("source", "group", "t", "seq", "generation", "member", "topic",
                                F.col("p.partitions").alias("partition"),
                                F.col("p.offsets").alias("offset"))
