#!/usr/bin/env bash
# The interop matrix's non-Python clients (tests/interop/test_interop_{kcat,kafkajs}.py):
# kcat (librdkafka 2.0.2) and kafkajs from the lockfile. The Go clients (Sarama, franz-go) come
# from the Go module proxy and are built by go-clients.sh with the machine's Go.
# Run as root by .ci/run before `make test`; in CI a missing client fails its test.
set -euo pipefail
cd "$(dirname "$0")/../.."

packages=(kcat)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
bash .ci/apt-install "${packages[@]}"

(cd tests/interop/clients/kafkajs && npm ci --no-audit --no-fund --loglevel=error)
