#!/usr/bin/env bash
# The analytics report's system needs (tests/pipeline/test_report_pipeline.py, tests/pipeline/test_lag_rules.py):
# Java 17+ for Spark in local mode, and Debian's Chromium, in which a test opens report.html.
# Run as root by .ci/run before `make test`; in CI a missing Chromium fails its test.
set -euo pipefail

wanted=()
command -v java >/dev/null || wanted+=(openjdk-17-jre-headless)
command -v chromium >/dev/null || wanted+=(chromium)
bash "$(dirname "$0")/../apt-install" "${wanted[@]}"
