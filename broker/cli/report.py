"""``groupbroker report``: the PySpark analytics report (Spark is imported only when it runs)."""

from __future__ import annotations

import logging

from pipeline import options as report_options


def add_parser(commands) -> None:
    report = commands.add_parser("report", help="the analytics report (PySpark) over data dirs' "
                                 "offsets logs and group event journals")
    report_options.add_arguments(report)
    report.set_defaults(master="local[*]")


def run(args) -> int:
    try:
        from pipeline.job import run_args
    except ImportError as e:
        logging.getLogger("groupbroker").error(
            "the report needs the 'report' extra (pip install 'groupbroker[report]'): %s", e)
        return 2
    return run_args(args)
