"""The report's tables, derived from the offsets records and the journal events (pipeline.sources).

Only ``committed_offsets`` reads the offsets logs (the latest commit per partition survives
compaction); everything else reads the journal alone, so compacting the offsets logs cannot
change it. Times are Spark timestamps, durations milliseconds. docs/analytics.md describes
every column.
"""

from __future__ import annotations

import bisect

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .lag_rules import STATUSES, Commit, evaluate
from .reconciliation import CONSUMER_EVENTS, EPOCH_FIELDS, EVENT_FIELDS, MEMBER_FIELDS
from .reconciliation import MEMBERSHIP_EVENTS, epoch_rows
from .sources import commits
from .task_moves import MOVE_FIELDS, move_rows

PARTITION = ["source", "group", "topic", "partition"]
REBALANCE_EVENTS = ["rebalance_started", "rebalance_completed", "sync_completed"]
REMOVAL_EVENTS = ["member_left", "member_expired", "member_fenced", "member_removed"]


def _time(column: str) -> F.Column:
    return F.timestamp_millis(F.col(column))


def _latest(df: DataFrame, keys: list[str], *order: F.Column) -> DataFrame:
    """The last row of ``df`` per ``keys`` by ``order``."""
    w = Window.partitionBy(*keys).orderBy(*[o.desc() for o in order])
    return df.withColumn("_rn", F.row_number().over(w)).filter(F.col("_rn") == 1).drop("_rn")


def _samples(events: DataFrame) -> DataFrame:
    return events.filter(F.col("event") == "log_end_offset").select(
        "source", "topic", "partition", "t", "seq", F.col("offset").alias("log_end_offset"))


def log_ends(events: DataFrame) -> DataFrame:
    """The last sampled log-end offset of every partition."""
    latest = _latest(_samples(events), ["source", "topic", "partition"], F.col("t"), F.col("seq"))
    return latest.select("source", "topic", "partition", "log_end_offset",
                         _time("t").alias("log_end_time"))


def lagged_commits(events: DataFrame) -> DataFrame:
    """Every committed partition with the lag it left: the last log-end sample at or before
    the commit, minus the offset (at least 0, as Burrow counts; None before any sample)."""
    done = commits(events).withColumn("log_end_offset", F.lit(None).cast("long"))
    samples = _samples(events).select(
        "source", "topic", "partition", "t", "seq", "log_end_offset",
        *[F.lit(None).cast(t).alias(c) for c, t in (("group", "string"), ("generation", "int"),
                                                    ("member", "string"), ("offset", "long"))])
    upto = (Window.partitionBy("source", "topic", "partition").orderBy("t", "seq")
            .rowsBetween(Window.unboundedPreceding, 0))
    both = done.unionByName(samples).withColumn(
        "log_end_offset", F.last("log_end_offset", ignorenulls=True).over(upto))
    return (both.filter(F.col("group").isNotNull())
            .withColumn("lag", F.greatest(F.col("log_end_offset") - F.col("offset"), F.lit(0))))


def committed_offsets(offsets: DataFrame, ends: DataFrame, since_ms: int | None) -> DataFrame:
    """The latest committed offset per group and partition (offsets log), its lag now."""
    changes = offsets.filter(F.col("kind").isin("commit", "commit_tombstone"))
    latest = _latest(changes, PARTITION, F.col("log_offset")).filter(F.col("kind") == "commit")
    if since_ms is not None:
        latest = latest.filter(F.col("commit_ms") >= since_ms)
    groups = _latest(offsets.filter(F.col("kind").isin("group", "group_tombstone")),
                     ["source", "group"], F.col("log_offset"))
    groups = groups.select("source", "group", F.when(F.col("kind") == "group", F.col("generation"))
                           .alias("group_generation"))
    return (latest.join(ends, ["source", "topic", "partition"], "left")
            .join(groups, ["source", "group"], "left")
            .select(*PARTITION, "offset", "leader_epoch", "metadata",
                    _time("commit_ms").alias("commit_time"), _time("expire_ms").alias("expire_time"),
                    "log_end_offset", "log_end_time",
                    F.greatest(F.col("log_end_offset") - F.col("offset"), F.lit(0)).alias("lag"),
                    "group_generation"))


_REBALANCE_SCHEMA = T.StructType([
    T.StructField("source", T.StringType()), T.StructField("group", T.StringType()),
    T.StructField("generation", T.IntegerType()), T.StructField("start_ms", T.LongType()),
    T.StructField("joined_ms", T.LongType()), T.StructField("end_ms", T.LongType()),
    T.StructField("cause", T.StringType()), T.StructField("causes", T.ArrayType(T.StringType())),
    T.StructField("reason", T.StringType()),
    T.StructField("members_before", T.ArrayType(T.StringType())),
    T.StructField("members_after", T.ArrayType(T.StringType())),
    T.StructField("removed", T.ArrayType(T.StructType([
        T.StructField("member", T.StringType()), T.StructField("event", T.StringType()),
        T.StructField("reason", T.StringType())]))),
    T.StructField("protocol", T.StringType()), T.StructField("leader", T.StringType()),
    T.StructField("outcome", T.StringType()),
])


def rebalance_rows(source: str, group: str, events, runs: list[int]) -> list[tuple]:
    """The rebalances of one group from its journal events (dicts, in ``seq`` order).

    A rebalance runs from the first ``rebalance_started`` after the group was last Stable or
    Empty to the ``sync_completed`` of the generation it formed (outcome "stable"), or to
    its forming with no members ("empty"), or to the next start when the generation it formed
    never synced ("superseded"). ``runs`` are the ``seq`` of each ``journal_opened`` (broker
    start): a rebalance a restart cut short ends there ("interrupted"). Members removed since
    the previous generation formed are listed with the rebalance they fall into.
    """
    rows: list[dict] = []
    current: dict | None = None
    removed: list = []
    run = None
    members: list | None = None            # of the last generation formed

    def close(outcome: str, end: int | None) -> None:
        nonlocal current
        current.update(outcome=outcome, end_ms=end)
        rows.append(current)
        current = None

    for e in events:
        this_run = bisect.bisect_right(runs, e["seq"])
        if this_run != run and current is not None:
            close("interrupted", None)
        run = this_run
        kind = e["event"]
        if kind == "rebalance_started":
            if current is not None and current["joined_ms"] is not None:
                close("superseded", e["t"])
            if current is None:
                before = members if members is not None else ([] if e["generation"] == 0 else None)
                current = dict(generation=e["generation"] + 1, start_ms=e["t"], joined_ms=None,
                               cause=e["cause"], causes=[], reason=e["reason"],
                               members_before=before, members_after=None, removed=removed,
                               protocol=None, leader=None)
                removed = []
            current["causes"].append(e["cause"])
        elif kind in REMOVAL_EVENTS:
            entry = (e["member"], kind, e["reason"])
            (current["removed"] if current is not None and current["joined_ms"] is None
             else removed).append(entry)
        elif kind == "rebalance_completed":
            if current is None:                   # the journal begins inside this rebalance
                current = dict(start_ms=None, cause=None, causes=[], reason=None,
                               members_before=None, removed=removed)
                removed = []
            current.update(generation=e["generation"], joined_ms=e["t"], members_after=e["members"],
                           protocol=e["protocol"], leader=e["leader"])
            members = e["members"]
            if not e["members"]:
                close("empty", e["t"])
        elif kind == "sync_completed" and current is not None and current["generation"] == e["generation"]:
            close("stable", e["t"])
    if current is not None:
        close("in_progress", None)
    return [(source, group, r["generation"], r["start_ms"], r["joined_ms"], r["end_ms"], r["cause"],
             r["causes"], r["reason"], r["members_before"], r["members_after"], r["removed"],
             r["protocol"], r["leader"], r["outcome"]) for r in rows]


def rebalances(events: DataFrame) -> DataFrame:
    """One row per group and generation a rebalance produced (or is producing); see
    :func:`rebalance_rows`. ``duration_ms`` is how long the group consumed nothing."""
    spark = events.sparkSession
    opened: dict[str, list[int]] = {}
    for r in events.filter(F.col("event") == "journal_opened").select("source", "seq").collect():
        opened.setdefault(r["source"], []).append(r["seq"])
    runs = {source: sorted(seqs) for source, seqs in opened.items()}
    wanted = ["source", "group", "seq", "t", "event", "generation", "member", "cause", "reason",
              "members", "protocol", "leader"]
    keyed = (events.filter(F.col("event").isin(*REBALANCE_EVENTS, *REMOVAL_EVENTS)).select(*wanted)
             .rdd.map(lambda r: ((r["source"], r["group"]), r.asDict())).groupByKey())
    rows = keyed.flatMap(lambda kv: rebalance_rows(
        kv[0][0], kv[0][1], sorted(kv[1], key=lambda e: e["seq"]), runs.get(kv[0][0], [])))
    df = spark.createDataFrame(rows, _REBALANCE_SCHEMA)
    duration = F.col("end_ms") - F.col("start_ms")
    return df.select(
        "source", "group", "generation", _time("start_ms").alias("start_time"),
        _time("joined_ms").alias("joined_time"), _time("end_ms").alias("end_time"),
        duration.alias("duration_ms"), (F.col("joined_ms") - F.col("start_ms")).alias("join_ms"),
        "cause", "causes", "reason", "members_before", "members_after", "removed", "protocol",
        "leader", "outcome",
        F.sum(duration).over(Window.partitionBy("source", "group")).alias("group_stopped_ms"))


_RECONCILIATION = T.StructType([
    T.StructField("member", T.StringType()), T.StructField("client_id", T.StringType()),
    T.StructField("protocol", T.StringType()), T.StructField("joined", T.BooleanType()),
    T.StructField("start_ms", T.LongType()), T.StructField("target_ms", T.LongType()),
    T.StructField("reconciled_ms", T.LongType()), T.StructField("end_ms", T.LongType()),
    T.StructField("steps", T.IntegerType()), T.StructField("revoking", T.BooleanType()),
    T.StructField("waiting", T.BooleanType()), T.StructField("outcome", T.StringType()),
])
_EPOCH_SCHEMA = T.StructType([
    T.StructField("source", T.StringType()), T.StructField("group", T.StringType()),
    T.StructField("epoch", T.IntegerType()), T.StructField("start_ms", T.LongType()),
    T.StructField("bump_ms", T.LongType()), T.StructField("cause", T.StringType()),
    T.StructField("cause_member", T.StringType()), T.StructField("cause_client_id", T.StringType()),
    T.StructField("target_ms", T.LongType()), T.StructField("assignor", T.StringType()),
    T.StructField("target_members", T.IntegerType()), T.StructField("end_ms", T.LongType()),
    T.StructField("next_ms", T.LongType()), T.StructField("outcome", T.StringType()),
    T.StructField("reconciliations", T.ArrayType(_RECONCILIATION)),
])
assert [f.name for f in _RECONCILIATION.fields] == list(MEMBER_FIELDS)
assert [f.name for f in _EPOCH_SCHEMA.fields][2:] == list(EPOCH_FIELDS)


def _epoch_tuples(source: str, group: str, events) -> list[tuple]:
    return [(source, group, *[r[f] for f in EPOCH_FIELDS[:-1]],
             [tuple(w[f] for f in MEMBER_FIELDS) for w in r["reconciliations"]])
            for r in epoch_rows(events)]


def consumer_group_epochs(events: DataFrame) -> DataFrame:
    """Every group epoch of every consumer group, each with its members' ways to it (the
    nested ``reconciliations``), as pipeline/reconciliation.py reads them from the journal;
    :func:`consumer_epochs` and :func:`member_reconciliations` are the tables made of it."""
    spark = events.sparkSession
    consumer = events.filter(F.col("event").isin(*CONSUMER_EVENTS)).select("source", "group").distinct()
    keyed = (events.filter(F.col("event").isin(*CONSUMER_EVENTS, *MEMBERSHIP_EVENTS))
             .join(consumer, ["source", "group"], "left_semi").select("source", "group", *EVENT_FIELDS)
             .rdd.map(lambda r: ((r["source"], r["group"]), r.asDict())).groupByKey())
    rows = keyed.flatMap(lambda kv: _epoch_tuples(kv[0][0], kv[0][1],
                                                  sorted(kv[1], key=lambda e: e["seq"])))
    return spark.createDataFrame(rows, _EPOCH_SCHEMA)


def consumer_epochs(epochs: DataFrame) -> DataFrame:
    """One row per consumer group and group epoch: when and why it started, the target
    assignment computed for it, and how its members got there. ``duration_ms`` runs from
    the start to the last member's reconciliation (only when every member reconciled)."""
    ways = F.col("reconciliations")
    count = lambda outcome: F.size(F.filter(ways, lambda w: w["outcome"] == outcome))  # noqa: E731
    return epochs.select(
        "source", "group", "epoch", _time("start_ms").alias("start_time"),
        _time("bump_ms").alias("bump_time"), "cause", "cause_member", "cause_client_id",
        _time("target_ms").alias("target_time"),
        (F.col("target_ms") - F.col("start_ms")).alias("assignment_ms"), "assignor", "target_members",
        F.transform(ways, lambda w: w["member"]).alias("members"),
        count("reconciled").alias("reconciled_members"),
        count("unfinished").alias("unfinished_members"),
        F.size(F.filter(ways, lambda w: w["revoking"])).alias("revoking_members"),
        F.size(F.filter(ways, lambda w: w["waiting"])).alias("waiting_members"),
        _time("end_ms").alias("end_time"), (F.col("end_ms") - F.col("start_ms")).alias("duration_ms"),
        _time("next_ms").alias("next_epoch_time"), "outcome",
        F.count(F.lit(1)).over(Window.partitionBy("source", "group")).alias("group_epochs"))


def member_reconciliations(epochs: DataFrame) -> DataFrame:
    """One row per consumer group, group epoch and member that had to reach it: how long it
    took (``reconcile_ms``, from the epoch's start to the member's STABLE at that epoch; None
    when it never got there), whether it revoked or waited on the way, and how it ended; then
    per member, how many epochs it spent revoking and waiting."""
    w = epochs.select("source", "group", "epoch", "cause", F.explode("reconciliations").alias("w"))
    member = Window.partitionBy("source", "group", "member")
    return w.select(
        "source", "group", "epoch", "cause", "w.member", "w.client_id", "w.protocol", "w.joined",
        _time("w.start_ms").alias("start_time"), _time("w.target_ms").alias("target_time"),
        _time("w.reconciled_ms").alias("reconciled_time"),
        (F.col("w.reconciled_ms") - F.col("w.start_ms")).alias("reconcile_ms"),
        (F.col("w.reconciled_ms") - F.col("w.target_ms")).alias("since_target_ms"),
        _time("w.end_ms").alias("end_time"), "w.steps", "w.revoking", "w.waiting", "w.outcome",
    ).select(
        "*", F.count(F.lit(1)).over(member).alias("member_epochs"),
        F.count(F.when(F.col("revoking"), 1)).over(member).alias("member_epochs_revoking"),
        F.count(F.when(F.col("waiting"), 1)).over(member).alias("member_epochs_waiting"),
        F.count(F.when(F.col("outcome") == "unfinished", 1)).over(member).alias("member_unfinished"))


def share_members(events: DataFrame) -> DataFrame:
    """Each share-group member's deliveries and what became of them; a group's expired locks
    on a row of their own (no member)."""
    share = events.filter(F.col("event").startswith("share_"))

    def total(event: str, column: str) -> F.Column:
        return F.sum(F.when(F.col("event") == event, F.col(column)).otherwise(F.lit(0))).cast("long")
    delivered_t = F.when(F.col("event") == "share_delivered", F.col("t"))
    rows = share.groupBy("source", "group", "member").agg(
        total("share_delivered", "records").alias("delivered"),
        total("share_delivered", "redelivered").alias("redelivered"),
        total("share_acknowledged", "accepted").alias("accepted"),
        total("share_acknowledged", "released").alias("released"),
        total("share_acknowledged", "rejected").alias("rejected"),
        (total("share_acknowledged", "archived") + total("share_locks_expired", "archived")).alias("archived"),
        total("share_locks_expired", "records").alias("lock_expired"),
        F.min(delivered_t).alias("_first"), F.max(delivered_t).alias("_last"))
    span_s = F.greatest((F.col("_last") - F.col("_first")) / 1000.0, F.lit(1.0))
    return rows.select(
        "source", "group", "member", "delivered", "redelivered",
        F.when(F.col("delivered") > 0, F.col("redelivered") / F.col("delivered")).alias("redelivery_rate"),
        "accepted", "released", "rejected", "archived", "lock_expired",
        F.when(F.col("delivered") > 0, F.col("delivered") / span_s).alias("records_per_s"),
        F.timestamp_millis(F.col("_first")).alias("first_delivery"),
        F.timestamp_millis(F.col("_last")).alias("last_delivery"))


_MOVE_SCHEMA = T.StructType([
    T.StructField("source", T.StringType()), T.StructField("group", T.StringType()),
    T.StructField("epoch", T.IntegerType()), T.StructField("t", T.LongType()),
    *[T.StructField(name, T.IntegerType()) for name in MOVE_FIELDS[2:8]],
    T.StructField("cause_member", T.StringType()), T.StructField("placement", T.StringType()),
])
assert [f.name for f in _MOVE_SCHEMA.fields][2:] == list(MOVE_FIELDS)


def streams_task_moves(events: DataFrame) -> DataFrame:
    """One row per streams group (KIP-1071) and target assignment: its members, active and
    standby tasks, and how many moved since the group's previous target (pipeline/task_moves.py);
    ``time`` is when it was computed."""
    spark = events.sparkSession
    keyed = (events.filter((F.col("event") == "target_assignment") & F.col("tasks").isNotNull())
             .select("source", "group", "seq", "t", "epoch", "member", "tasks")
             .rdd.map(lambda r: ((r["source"], r["group"]), r.asDict(recursive=True))).groupByKey())
    rows = keyed.flatMap(lambda kv: [(kv[0][0], kv[0][1], *[row[f] for f in MOVE_FIELDS])
                                     for row in move_rows(sorted(kv[1], key=lambda e: e["seq"]))])
    return spark.createDataFrame(rows, _MOVE_SCHEMA).select(
        "source", "group", "epoch", _time("t").alias("time"), *MOVE_FIELDS[2:])


def member_errors(events: DataFrame) -> DataFrame:
    """Every error answered, counted per group, member, API and error."""
    return events.filter(F.col("event") == "error").groupBy(
        "source", "group", "member", "api", "error").agg(
        F.count(F.lit(1)).alias("count"), F.timestamp_millis(F.min("t")).alias("first_seen"),
        F.timestamp_millis(F.max("t")).alias("last_seen"),
        F.array_sort(F.collect_set("generation_sent")).alias("generations_sent"),
        F.array_sort(F.collect_set("generation")).alias("generations_current"))


_VERDICT = T.StructType([T.StructField("status", T.StringType()), T.StructField("rule", T.StringType())])


@F.udf(returnType=_VERDICT)
def _verdict(window, now, current_lag):
    status, rule = evaluate([Commit(c["t"], c["offset"], c["lag"]) for c in window], now, current_lag)
    return status, rule


def lag_status(events: DataFrame, ends: DataFrame, window: int) -> DataFrame:
    """Per group and partition: the lag rules (pipeline/lag_rules.py) over the last ``window``
    commits, evaluated at the end of the source's journal."""
    recent = Window.partitionBy(*PARTITION).orderBy(F.col("t").desc(), F.col("seq").desc())
    windows = (lagged_commits(events).withColumn("_rn", F.row_number().over(recent))
               .filter(F.col("_rn") <= window).groupBy(*PARTITION)
               .agg(F.array_sort(F.collect_list(F.struct("t", "seq", "offset", "lag"))).alias("w")))
    now = events.groupBy("source").agg(F.max("t").alias("now"))
    last = F.element_at("w", -1)
    rows = (_still_there(windows.join(ends, ["source", "topic", "partition"], "left"), events)
            .join(now, "source")
            .withColumn("current_lag", F.greatest(F.col("log_end_offset") - last["offset"], F.lit(0)))
            .withColumn("v", _verdict("w", "now", "current_lag")))
    severity = F.array(*[F.lit(s) for s in STATUSES])
    worst = F.max(F.array_position(severity, F.col("v.status"))).over(Window.partitionBy("source", "group"))
    return rows.select(
        *PARTITION, F.col("v.status").alias("status"), F.col("v.rule").alias("rule"),
        F.element_at(severity, worst.cast("int")).alias("group_status"),
        last["offset"].alias("last_offset"), F.timestamp_millis(last["t"]).alias("last_commit_time"),
        "log_end_offset", "current_lag", F.size("w").alias("commits_in_window"),
        F.timestamp_millis(F.element_at("w", 1)["t"]).alias("window_start_time"),
        F.transform("w", lambda c: c["lag"]).alias("window_lags"),
        _time("now").alias("evaluated_at"))


def _still_there(windows: DataFrame, events: DataFrame) -> DataFrame:
    """The commit windows whose group and topic were not deleted after their last commit
    (a group deleted, or expired, and a topic deleted leave no lag behind; one committed to
    again after its deletion is back)."""
    def deletions(event: str, key: str, column: str) -> DataFrame:
        return (events.filter(F.col("event") == event).groupBy("source", key)
                .agg(F.max(F.struct("t", "seq")).alias(column)))

    last = F.struct(F.element_at("w", -1)["t"].alias("t"), F.element_at("w", -1)["seq"].alias("seq"))
    return (windows.join(deletions("group_deleted", "group", "_group_gone"), ["source", "group"], "left")
            .join(deletions("topic_deleted", "topic", "_topic_gone"), ["source", "topic"], "left")
            .filter((F.col("_group_gone").isNull() | (F.col("_group_gone") < last))
                    & (F.col("_topic_gone").isNull() | (F.col("_topic_gone") < last)))
            .drop("_group_gone", "_topic_gone"))


def lag_history(events: DataFrame, groups: list[tuple[str, str]]) -> list[tuple]:
    """(source, group, topic, partition, t, lag) at every commit and log-end sample of the
    partitions ``groups`` committed, for the report's lag-over-time chart (small: collected)."""
    if not groups:
        return []
    wanted = events.sparkSession.createDataFrame(groups, "source string, group string")
    done = commits(events).join(wanted, ["source", "group"]).withColumn(
        "log_end_offset", F.lit(None).cast("long"))
    parts = done.select(*PARTITION).distinct()
    samples = (_samples(events).join(parts, ["source", "topic", "partition"])
               .withColumn("offset", F.lit(None).cast("long")))
    points = done.select(*PARTITION, "t", "seq", "offset", "log_end_offset").unionByName(samples)
    upto = Window.partitionBy(*PARTITION).orderBy("t", "seq").rowsBetween(Window.unboundedPreceding, 0)
    points = (points.withColumn("o", F.last("offset", ignorenulls=True).over(upto))
              .withColumn("e", F.last("log_end_offset", ignorenulls=True).over(upto))
              .filter(F.col("o").isNotNull() & F.col("e").isNotNull())
              .select(*PARTITION, "t", F.greatest(F.col("e") - F.col("o"), F.lit(0)).alias("lag")))
    return [tuple(r) for r in points.orderBy("t").collect()]
