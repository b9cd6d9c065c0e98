"""report.html: one self-contained page (PNG charts inlined as base64, no scripts, no links):
classic groups' rebalances, lag and errors, consumer groups' (KIP-848) group epochs and their
members' reconciliation, share groups' deliveries, streams groups' task movements.

:func:`gather` collects the little the page shows from the tables (a few hundred rows at most,
whatever the input size); :func:`render` draws it with matplotlib and writes the page.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402  (after choosing the backend)
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from pyspark.sql import DataFrame  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from .tables import lag_history  # noqa: E402

TOP = 15               # groups (or error sources) per chart
WORST_LAG_GROUPS = 5
TABLE_ROWS = 50
RECONCILIATION_ROWS = 30     # group/member lines in the reconciliation chart
CHARTS = ("rebalance-timeline", "stop-time", "lag-over-time", "error-sources", "consumer-reconciliation")


def gather(tables: dict[str, DataFrame], events: DataFrame) -> dict:
    """The rows the page shows, collected to the driver."""
    reb = tables["rebalances"]
    stopped = (reb.groupBy("source", "group").agg(F.sum("duration_ms").alias("stopped_ms"),
                                                  F.count(F.lit(1)).alias("rebalances"))
               .orderBy(F.desc("stopped_ms"), F.desc("rebalances")).limit(TOP).collect())
    busiest = [(r["source"], r["group"]) for r in stopped]
    timeline = []
    if busiest:
        wanted = events.sparkSession.createDataFrame(busiest, "source string, group string")
        timeline = reb.join(wanted, ["source", "group"]).select(
            "source", "group", "generation", "start_time", "end_time", "duration_ms", "cause").collect()
    lag = tables["lag_status"]
    worst = (lag.groupBy("source", "group").agg(F.sum("current_lag").alias("lag"))
             .filter(F.col("lag") > 0).orderBy(F.desc("lag")).limit(WORST_LAG_GROUPS).collect())
    return {
        "stopped": stopped,
        "timeline": timeline,
        "lag_points": lag_history(events, [(r["source"], r["group"]) for r in worst]),
        "errors": tables["member_errors"].orderBy(F.desc("count")).limit(TOP).collect(),
        "statuses": {r["status"]: r["count"] for r in lag.groupBy("status").count().collect()},
        "not_ok": lag.filter(F.col("status") != "OK").orderBy("source", "group", "topic", "partition")
                     .limit(TABLE_ROWS).collect(),
        "recent": reb.orderBy(F.desc("start_time")).limit(TABLE_ROWS).collect(),
        "counts": {name: df.count() for name, df in tables.items()},
        **_consumer_groups(tables),
        "share": tables["share_members"].orderBy("source", "group", F.col("member").asc_nulls_last())
                                        .limit(TABLE_ROWS).collect(),
        "task_moves": tables["streams_task_moves"].orderBy(F.desc("time"), "source", "group")
                                                  .limit(TABLE_ROWS).collect(),
    }


def _consumer_groups(tables: dict[str, DataFrame]) -> dict:
    """The consumer-group (KIP-848) part: the latest epochs, the members' ways to them (all of
    the groups that took longest to reconcile, for the chart; the unfinished and slowest, for
    the table) and per member the epochs it spent revoking and waiting."""
    epochs, ways = tables["consumer_epochs"], tables["member_reconciliations"]
    unfinished = F.col("outcome") == "unfinished"
    slowest = (ways.groupBy("source", "group")
               .agg(F.sum(F.coalesce("reconcile_ms", F.lit(0))).alias("ms"),
                    F.count(F.when(unfinished, 1)).alias("unfinished"))
               .orderBy(F.desc("unfinished"), F.desc("ms")).limit(TOP).collect())
    chart = []
    if slowest:
        wanted = ways.sparkSession.createDataFrame([(r["source"], r["group"]) for r in slowest],
                                                   "source string, group string")
        chart = ways.join(wanted, ["source", "group"]).select(
            "source", "group", "epoch", "member", "client_id", "cause", "start_time",
            "reconciled_time", "end_time", "outcome").orderBy(F.desc("start_time")).limit(
            20 * RECONCILIATION_ROWS).collect()
    members = (ways.groupBy("source", "group", "member")
               .agg(F.first("client_id", ignorenulls=True).alias("client_id"),
                    F.count(F.lit(1)).alias("epochs"),
                    F.count(F.when(F.col("outcome") == "reconciled", 1)).alias("reconciled"),
                    F.count(F.when(unfinished, 1)).alias("unfinished"),
                    F.count(F.when(F.col("revoking"), 1)).alias("epochs_revoking"),
                    F.count(F.when(F.col("waiting"), 1)).alias("epochs_waiting"),
                    F.max("reconcile_ms").alias("slowest_ms"),
                    F.round(F.avg("reconcile_ms")).cast("long").alias("mean_ms"))
               .orderBy(F.desc("unfinished"), F.desc("epochs_revoking"), F.desc("epochs_waiting"),
                        "source", "group", "member").limit(TABLE_ROWS).collect())
    return {
        "epochs": epochs.orderBy(F.desc("start_time"), F.desc("epoch")).limit(TABLE_ROWS).collect(),
        "ways": chart,
        "slow_ways": ways.orderBy(F.desc(unfinished.cast("int")), F.desc_nulls_last("reconcile_ms"),
                                  "source", "group", "epoch", "member").limit(TABLE_ROWS).collect(),
        "consumer_members": members,
    }


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _empty(ax, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what} in the data", ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _label(source: str, group: str, sources: int) -> str:
    return group if sources == 1 else f"{group} ({source})"


def _timeline(data: dict, sources: int) -> str:
    rows = data["timeline"]
    groups = sorted({(r["source"], r["group"]) for r in rows})
    fig, ax = plt.subplots(figsize=(10, 0.45 * max(len(groups), 4) + 1.2))
    if not rows:
        _empty(ax, "rebalances")
    else:
        causes = sorted({r["cause"] or "unknown" for r in rows})
        colors = dict(zip(causes, plt.get_cmap("tab10").colors))
        for y, key in enumerate(groups):
            for r in (r for r in rows if (r["source"], r["group"]) == key and r["start_time"]):
                start = mdates.date2num(r["start_time"])
                width = (r["duration_ms"] or 0) / 86_400_000
                color = colors[r["cause"] or "unknown"]
                ax.broken_barh([(start, width)], (y - 0.35, 0.7), color=color)
                ax.plot([start], [y], marker="|", markersize=14, color=color)
        ax.set_yticks(range(len(groups)), [_label(s, g, sources) for s, g in groups])
        ax.xaxis_date()
        ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in causes],
                  labels=causes, title="cause", loc="upper left", bbox_to_anchor=(1.01, 1))
        ax.set_xlabel("time (UTC); a bar runs from the rebalance's start until the group is Stable again")
    ax.set_title("Rebalance timeline per group")
    return _png(fig)


def _stop_time(data: dict, sources: int) -> str:
    rows = [r for r in data["stopped"] if r["stopped_ms"]]
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(rows), 4) + 1.2))
    if not rows:
        _empty(ax, "completed rebalances")
    else:
        ax.barh([_label(r["source"], r["group"], sources) for r in rows][::-1],
                [r["stopped_ms"] / 1000 for r in rows][::-1], color="tab:red")
        ax.set_xlabel("seconds not consuming (sum of rebalance durations)")
    ax.set_title("Stop time per group")
    return _png(fig)


def lag_series(points: list[tuple]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """Total lag of each group over time: after every point, the sum of each partition's
    latest lag."""
    latest: dict[tuple[str, str], dict] = defaultdict(dict)
    series: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for source, group, topic, partition, t, lag in points:
        parts = latest[(source, group)]
        parts[(topic, partition)] = lag
        series[(source, group)].append((t, sum(parts.values())))
    return series


def _lag(data: dict, sources: int) -> str:
    series = lag_series(data["lag_points"])
    fig, ax = plt.subplots(figsize=(10, 4))
    if not series:
        _empty(ax, "groups with lag")
    else:
        for (source, group), values in series.items():
            times = [dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc) for t, _ in values]
            ax.step(times, [v for _, v in values], where="post", label=_label(source, group, sources))
        ax.xaxis_date()
        ax.set_ylabel("records behind (all partitions)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.set_title(f"Lag over time: the {WORST_LAG_GROUPS} groups furthest behind now")
    return _png(fig)


def _errors(data: dict, sources: int) -> str:
    rows = data["errors"]
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(rows), 4) + 1.2))
    if not rows:
        _empty(ax, "errors")
    else:
        labels = [f"{_label(r['source'], r['group'], sources)} / {r['member'] or '-'} / "
                  f"{r['api']} {r['error']}" for r in rows]
        ax.barh(labels[::-1], [r["count"] for r in rows][::-1], color="tab:orange")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("errors answered")
    ax.set_title("Top error sources (group / member / API error)")
    return _png(fig)


def _member_label(r, sources: int) -> str:
    who = f"{r['client_id']} {r['member'][:8]}" if r["client_id"] else r["member"]
    return f"{_label(r['source'], r['group'], sources)} / {who}"


def _reconciliation(data: dict, sources: int) -> str:
    rows = [r for r in data["ways"] if r["start_time"] is not None]
    lines = sorted({(r["source"], r["group"], r["member"]) for r in rows})[:RECONCILIATION_ROWS]
    fig, ax = plt.subplots(figsize=(10, 0.4 * max(len(lines), 4) + 1.2))
    if not rows:
        _empty(ax, "consumer-group epochs")
    else:
        last = max(max(t for t in (r["start_time"], r["reconciled_time"], r["end_time"]) if t)
                   for r in rows)
        causes = sorted({r["cause"] or "unknown" for r in rows})
        colors = dict(zip(causes, plt.get_cmap("tab10").colors))
        labels = {}
        for y, key in enumerate(lines):
            for r in (r for r in rows if (r["source"], r["group"], r["member"]) == key):
                labels[y] = _member_label(r, sources)
                start = mdates.date2num(r["start_time"])
                end = r["reconciled_time"] or r["end_time"] or last
                color = colors[r["cause"] or "unknown"]
                done = r["outcome"] == "reconciled"
                ax.broken_barh([(start, mdates.date2num(end) - start)], (y - 0.35, 0.7), color=color,
                               alpha=1.0 if done else 0.35, hatch=None if done else "//")
                ax.plot([start], [y], marker="|", markersize=12, color=color)
                ax.annotate(str(r["epoch"]), (start, y + 0.38), fontsize=7, color="#444")
        ax.set_yticks(range(len(lines)), [labels[y] for y in range(len(lines))])
        ax.xaxis_date()
        ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in causes],
                  labels=causes, title="epoch cause", loc="upper left", bbox_to_anchor=(1.01, 1))
        ax.set_xlabel("time (UTC); a bar runs from a group epoch's start (its number above) until "
                      "the member is STABLE at it\n(hatched: it never got there: superseded, left, "
                      "unfinished)")
    ax.set_title("Consumer groups (KIP-848): each member's reconciliation to each group epoch")
    return _png(fig)


def _table(rows, columns: list[str]) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    return str(value)


_STYLE = """body{font-family:sans-serif;margin:2em;color:#222}figure{margin:1.5em 0}
img{max-width:100%}table{border-collapse:collapse;font-size:0.85em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}th{background:#eee}"""


def render(data: dict, sources: list[str], path: str, generated: dt.datetime) -> None:
    """Write report.html to ``path``."""
    n = len(sources)
    charts = dict(zip(CHARTS, (_timeline(data, n), _stop_time(data, n), _lag(data, n), _errors(data, n),
                               _reconciliation(data, n))))
    captions = {
        "rebalance-timeline": "Rebalances of the groups that spent longest not consuming, coloured by cause.",
        "stop-time": "Time each group spent rebalancing (not consuming), summed over its rebalances.",
        "lag-over-time": "Records each group had not committed yet, at every commit and log-end sample.",
        "error-sources": "Who received which error, most frequent first.",
        "consumer-reconciliation": "Consumer groups that took longest to reconcile: every member's way "
                                   "to every group epoch.",
    }
    figure = {name: f'<figure id="{name}"><img alt="{name}" src="data:image/png;base64,{png}">'
                    f"<figcaption>{html.escape(captions[name])}</figcaption></figure>"
              for name, png in charts.items()}
    figures = "".join(png for name, png in figure.items() if name != "consumer-reconciliation")
    statuses = ", ".join(f"{s}: {c}" for s, c in sorted(data["statuses"].items()))
    counts = ", ".join(f"{name}: {c} rows" for name, c in data["counts"].items())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>groupbroker report</title>
<style>{_STYLE}</style></head><body>
<h1>Consumer groups: rebalances, group epochs, errors and lag</h1>
<p>Generated {html.escape(generated.isoformat(timespec='seconds'))} from
{html.escape(', '.join(sources))}. Tables: {html.escape(counts)}.</p>
{figures}
<h2>Lag status (partitions: {html.escape(statuses or 'none')})</h2>
{_table(data["not_ok"], ["source", "group", "topic", "partition", "status", "rule", "current_lag",
                         "last_commit_time"])}
<h2>Latest rebalances (classic groups)</h2>
{_table(data["recent"], ["source", "group", "generation", "start_time", "duration_ms", "cause",
                         "outcome", "members_after"])}
<h2 id="consumer-groups">Consumer groups (KIP-848): group epochs and reconciliation</h2>
<p>A consumer group does not stop for a new group epoch: each member reconciles on its own
heartbeats, revoking what it must give up, then waiting for partitions others still hold.
Reconciliation time runs from the epoch's start to the member's STABLE at that epoch.</p>
{figure["consumer-reconciliation"]}
<h3>Latest group epochs</h3>
{_table(data["epochs"], ["source", "group", "epoch", "start_time", "cause", "cause_client_id",
                         "cause_member", "assignor", "target_members", "assignment_ms",
                         "reconciled_members", "unfinished_members", "revoking_members",
                         "waiting_members", "duration_ms", "outcome"])}
<h3>Member reconciliations (unfinished first, then slowest)</h3>
{_table(data["slow_ways"], ["source", "group", "epoch", "cause", "client_id", "member", "joined",
                            "reconcile_ms", "since_target_ms", "steps", "revoking", "waiting",
                            "outcome"])}
<h3>Members: epochs spent revoking and waiting</h3>
{_table(data["consumer_members"], ["source", "group", "client_id", "member", "epochs", "reconciled",
                                   "unfinished", "epochs_revoking", "epochs_waiting", "slowest_ms",
                                   "mean_ms"])}
<h2 id="share-groups">Share groups (KIP-932): deliveries per member</h2>
<p>Records each member acquired (redelivered: with a delivery count above 1), what its
acknowledgements made of them (archived: released at the delivery limit), and records per second
between its first and last delivery; a row without a member counts the group's locks that ran out.</p>
{_table(data["share"], ["source", "group", "member", "delivered", "redelivered", "redelivery_rate",
                        "accepted", "released", "rejected", "archived", "lock_expired", "records_per_s"])}
<h2 id="streams-groups">Streams groups (KIP-1071): task movements</h2>
<p>Each target assignment of the broker's sticky task assignor: its members, its active and
standby tasks, and how many moved since the group's previous one (an active task whose owner
changed; a standby on a member that did not hold it); the placement is each member's active +
standby tasks. Streams groups' epochs and reconciliations are in the consumer-group tables above.</p>
{_table(data["task_moves"], ["source", "group", "epoch", "time", "members", "active_tasks", "standby_tasks",
                             "active_moved", "active_new", "standby_moved", "cause_member", "placement"])}
</body></html>
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
