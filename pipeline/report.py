"""report.html: one self-contained page (PNG charts inlined as base64, no scripts, no links).

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
CHARTS = ("rebalance-timeline", "stop-time", "lag-over-time", "error-sources")


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
    charts = dict(zip(CHARTS, (_timeline(data, n), _stop_time(data, n), _lag(data, n), _errors(data, n))))
    captions = {
        "rebalance-timeline": "Rebalances of the groups that spent longest not consuming, coloured by cause.",
        "stop-time": "Time each group spent rebalancing (not consuming), summed over its rebalances.",
        "lag-over-time": "Records each group had not committed yet, at every commit and log-end sample.",
        "error-sources": "Who received which error, most frequent first.",
    }
    figures = "".join(
        f'<figure id="{name}"><img alt="{name}" src="data:image/png;base64,{png}">'
        f"<figcaption>{html.escape(captions[name])}</figcaption></figure>"
        for name, png in charts.items())
    statuses = ", ".join(f"{s}: {c}" for s, c in sorted(data["statuses"].items()))
    counts = ", ".join(f"{name}: {c} rows" for name, c in data["counts"].items())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>groupbroker report</title>
<style>{_STYLE}</style></head><body>
<h1>Consumer groups: rebalances, errors and lag</h1>
<p>Generated {html.escape(generated.isoformat(timespec='seconds'))} from
{html.escape(', '.join(sources))}. Tables: {html.escape(counts)}.</p>
{figures}
<h2>Lag status (partitions: {html.escape(statuses or 'none')})</h2>
{_table(data["not_ok"], ["source", "group", "topic", "partition", "status", "rule", "current_lag",
                         "last_commit_time"])}
<h2>Latest rebalances</h2>
{_table(data["recent"], ["source", "group", "generation", "start_time", "duration_ms", "cause",
                         "outcome", "members_after"])}
</body></html>
"""
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
