#!/usr/bin/env bash
# The analytics report's system needs (tests/test_report_pipeline.py, tests/test_lag_rules.py):
# Java 17+ for Spark in local mode, and Debian's Chromium, in which a test opens report.html.
# Run as root by .ci/run before `make test`; in CI a missing Chromium fails its test.
set -euo pipefail

wanted=()
command -v java >/dev/null || wanted+=(openjdk-17-jre-headless)
command -v chromium >/dev/null || wanted+=(chromium)
if [ "${#wanted[@]}" -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >/dev/null
fi
