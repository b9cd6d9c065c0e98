"""The report job: ``groupbroker report`` runs it in-process; ``spark-submit pipeline/job.py``
runs the same code on a cluster.

    python pipeline/job.py --data-dir D [--data-dir D2 ...] --out OUT [--since T] [--master M]
    spark-submit --master spark://host:7077 pipeline/job.py --data-dir D ... --out OUT

It writes OUT/<table>/ (Parquet) for committed_offsets, rebalances, member_errors, lag_status,
consumer_epochs and member_reconciliations, and OUT/report.html. Local mode (the default
without spark-submit) binds Spark to 127.0.0.1. On a cluster the data dirs and OUT must be
paths every executor can read (a shared file system), construct and crc32c must be installed
on the workers, and the job ships this project's packages to them itself.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import tempfile
import zipfile
from pathlib import Path

if __package__ in (None, ""):            # run as a script (spark-submit pipeline/job.py)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import SparkSession  # noqa: E402

from pipeline import report, sources, tables  # noqa: E402
from pipeline.lag_rules import DEFAULT_WINDOW  # noqa: E402
from pipeline.options import add_arguments  # noqa: E402

log = logging.getLogger("groupbroker.pipeline")

TABLES = ("committed_offsets", "rebalances", "member_errors", "lag_status", "consumer_epochs",
          "member_reconciliations", "share_members", "streams_task_moves")
PACKAGES = ("pipeline", "offsets_log", "protocol", "coordinator")
LOCAL_SHUFFLE_PARTITIONS = 8     # Spark's 200 only cost task overhead on one machine


def spark_session(master: str | None, *, progress: bool = True, shuffle_partitions: int | None = None,
                  app: str = "groupbroker-report") -> SparkSession:
    """A session on ``master``; None means spark-submit's master, or local[*] without it."""
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ         # started by spark-submit
    if master is None and not submitted:
        master = "local[*]"
    builder = SparkSession.builder.appName(app).config(
        "spark.ui.showConsoleProgress", "true" if progress else "false")
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)     # workers see our packages
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false"))
        shuffle_partitions = shuffle_partitions or LOCAL_SHUFFLE_PARTITIONS
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    builder = builder.config("spark.sql.session.timeZone", "UTC")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if not spark.sparkContext.master.startswith("local"):
        _ship_code(spark)
    return spark


def _ship_code(spark: SparkSession) -> None:
    """Send this project's packages to the executors (they decode the offsets logs)."""
    root = Path(__file__).resolve().parent.parent
    archive = os.path.join(tempfile.mkdtemp(prefix="groupbroker-report-"), "groupbroker.zip")
    with zipfile.ZipFile(archive, "w") as z:
        for package in PACKAGES:
            for path in (root / package).rglob("*.py"):
                z.write(path, path.relative_to(root))
    spark.sparkContext.addPyFile(archive)


def build_tables(spark: SparkSession, data_dirs: list[str], since_ms: int | None = None,
                 window: int = DEFAULT_WINDOW):
    """(the tables by name, the journal events they came from: cached, unpersist when done)."""
    events = sources.journal_events(spark, data_dirs, since_ms)
    ends = tables.log_ends(events)
    epochs = tables.consumer_group_epochs(events)
    built = {
        "committed_offsets": tables.committed_offsets(sources.offsets_records(spark, data_dirs),
                                                      ends, since_ms),
        "rebalances": tables.rebalances(events),
        "member_errors": tables.member_errors(events),
        "lag_status": tables.lag_status(events, ends, window),
        "consumer_epochs": tables.consumer_epochs(epochs),
        "member_reconciliations": tables.member_reconciliations(epochs),
        "share_members": tables.share_members(events),
        "streams_task_moves": tables.streams_task_moves(events),
    }
    return built, events


def run(spark: SparkSession, data_dirs: list[str], out: str, since_ms: int | None = None,
        window: int = DEFAULT_WINDOW) -> dict[str, str]:
    """Write every table as Parquet under ``out`` and report.html; their paths by name."""
    os.makedirs(out, exist_ok=True)
    built, events = build_tables(spark, data_dirs, since_ms, window)
    paths = {}
    try:
        for name in TABLES:
            paths[name] = os.path.join(out, name)
            built[name].write.mode("overwrite").parquet(paths[name])
            log.info("wrote %s", paths[name])
        written = {name: spark.read.parquet(path) for name, path in paths.items()}
        paths["report"] = os.path.join(out, "report.html")
        report.render(report.gather(written, events), data_dirs, paths["report"],
                      dt.datetime.now(dt.timezone.utc))
        log.info("wrote %s", paths["report"])
    finally:
        events.unpersist()
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupbroker report", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run_args(args)


def run_args(args) -> int:
    """Run from parsed arguments (``groupbroker report`` shares these)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    missing = [d for d in args.data_dirs if not os.path.isdir(d)]
    if missing:
        log.error("no such data dir: %s", ", ".join(missing))
        return 2
    running = SparkSession.getActiveSession()          # a caller's session: use it, leave it running
    spark = running or spark_session(args.master)
    try:
        paths = run(spark, args.data_dirs, args.out, args.since, args.window)
    finally:
        if running is None:
            spark.stop()
    for name, path in paths.items():
        sys.stdout.write(f"{name}: {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
