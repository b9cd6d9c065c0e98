"""The report's command-line options, shared by ``groupbroker report`` and pipeline/job.py.

Free of pyspark, so the ``groupbroker`` command starts without loading it.
"""

from __future__ import annotations

import argparse
import datetime as dt

from .lag_rules import DEFAULT_WINDOW


def parse_time(text: str) -> int:
    """--since: epoch milliseconds, or an ISO-8601 time (UTC unless it says otherwise)."""
    if text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (epoch ms or ISO 8601)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", dest="data_dirs", action="append", required=True,
                        help="a broker's data dir (repeat for several brokers)")
    parser.add_argument("--out", required=True, help="directory for the tables and report.html")
    parser.add_argument("--since", type=parse_time,
                        help="only events and commits from this time on (epoch ms or ISO 8601)")
    parser.add_argument("--master", help="Spark master (default: spark-submit's, else local[*])")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                        help=f"commits per partition the lag rules look at (default {DEFAULT_WINDOW})")
