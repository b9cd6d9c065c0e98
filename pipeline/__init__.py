"""The analytics report: a PySpark job over brokers' offsets logs and group event journals.

``pipeline.job`` is the entry point (``groupbroker report`` and ``spark-submit``);
``sources`` reads the data dirs, ``tables`` derives the Parquet tables, ``lag_rules`` holds the
Burrow-style lag evaluation and ``reconciliation`` the reading of consumer groups' epochs, both
as plain Python; ``report`` draws report.html.
"""
