#!/usr/bin/env bash
# The interop tests' Go drivers (tests/interop/clients/{franz,sarama}/: franz-go and IBM/sarama
# from the Go module proxy): download their modules and build them with the machine's Go
# (GOTOOLCHAIN=local, Go 1.26+) into ~/.cache/groupbroker/go-clients/<name>-<hash>/, where the
# tests find them (tests/support/go_clients.py). Run by .ci/run after clients.sh, before
# `make test`; a missing or too old Go fails here and, in CI, in the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"      # where the machine image puts Go, if PATH lacks it
command -v go >/dev/null || { echo "go-clients.sh: no 'go' on PATH (Go 1.26+ needed)" >&2; exit 1; }
python3 tests/support/go_clients.py
