#!/usr/bin/env bash
# librdkafka's own integration tests (tests/interop/test_librdkafka_suite.py): librdkafka's source with its
# tests/ directory, as bundled in the npm package @confluentinc/kafka-javascript, built with its
# test runner into a cache outside the repository (/opt/librdkafka-tests/<version>, and
# /opt/librdkafka-tests/current pointing at it). Idempotent: a finished build made the same way
# (package, version, configure options, build packages) is kept.
# Run as root by .ci/run before `make test`; in CI a missing build fails the test.
set -euo pipefail

NPM_PACKAGE=@confluentinc/kafka-javascript
NPM_VERSION=1.10.1              # bundles librdkafka 2.15.1 (its package.json "librdkafka" field)
LIBRDKAFKA_VERSION=2.15.1
CACHE=${LIBRDKAFKA_TESTS_CACHE:-/opt/librdkafka-tests}
TREE=$CACHE/$LIBRDKAFKA_VERSION
STAMP=$TREE/.built
# No SASL/GSSAPI or HTTP client (OAUTHBEARER OIDC): the broker under test speaks PLAINTEXT.
CONFIGURE=(--no-download --disable-gssapi --disable-curl)
# Build tools, the compression libraries the tests exercise (snappy and lz4 are built in),
# OpenSSL (0064 checks that a client configured for SSL can be created) and RapidJSON (0053 and
# 0110 check the statistics JSON with it, and are skipped without it).
packages=(make gcc g++ pkg-config zlib1g-dev libzstd-dev libssl-dev rapidjson-dev)
extra=()
command -v npm >/dev/null || extra+=(npm)
bash "$(dirname "$0")/../apt-install" "${packages[@]}" "${extra[@]}"

recipe="$NPM_PACKAGE@$NPM_VERSION ${CONFIGURE[*]} ${packages[*]}"
if [ -x "$TREE/tests/test-runner" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$recipe" ]; then
    ln -sfn "$LIBRDKAFKA_VERSION" "$CACHE/current"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$NPM_PACKAGE@$NPM_VERSION" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/deps/librdkafka
grep -q "^#define RD_KAFKA_VERSION 0x020f01ff" "$work/package/deps/librdkafka/src/rdkafka.h" || {
    echo "librdkafka-tests: $NPM_PACKAGE@$NPM_VERSION does not bundle librdkafka $LIBRDKAFKA_VERSION" >&2
    exit 1
}

rm -rf "$TREE"
mkdir -p "$CACHE"
mv "$work/package/deps/librdkafka" "$TREE"
cd "$TREE"
# (The logs are not named configure.*: mklove would load such a file as a configure module.)
./configure "${CONFIGURE[@]}" >"$TREE/setup-configure.log" 2>&1 || {
    tail -40 "$TREE/setup-configure.log" >&2
    exit 1
}
start=$SECONDS
nice -n 10 make -j2 libs >"$TREE/setup-build.log" 2>&1 &&
    nice -n 10 make -j2 -C tests build >>"$TREE/setup-build.log" 2>&1 || {
    tail -60 "$TREE/setup-build.log" >&2
    exit 1
}
echo "$recipe" >"$STAMP"
ln -sfn "$LIBRDKAFKA_VERSION" "$CACHE/current"
echo "librdkafka-tests: built librdkafka $LIBRDKAFKA_VERSION and its test runner in $TREE ($((SECONDS - start)) s)"
