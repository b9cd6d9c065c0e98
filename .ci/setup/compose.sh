#!/usr/bin/env bash
# docker-compose (Debian's, 1.29) for tests/integration/test_docker.py, which validates docker-compose.yml
# with `docker-compose config -q`; no Docker engine is needed or started.
# Run as root by .ci/run before `make test`; in CI a missing docker-compose fails that test.
set -euo pipefail

if ! command -v docker-compose >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null
fi
