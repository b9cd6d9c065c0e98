#!/usr/bin/env bash
# librdkafka's own integration tests (tests/test_librdkafka_suite.py): librdkafka's source with its
# tests/ directory, as bundled in the npm package @confluentinc/kafka-javascript, built with its
# test runner into a cache outside the repository. Idempotent: an existing build of the same
# version is kept. Run as root by .ci/run before `make test`; in CI a missing build fails the test.
set -euo pipefail

NPM_PACKAGE=@confluentinc/kafka-javascript
NPM_VERSION=1.10.1              # bundles librdkafka 2.15.1 (its package.json "librdkafka" field)
LIBRDKAFKA_VERSION=2.15.1
CACHE=${LIBRDKAFKA_TESTS_CACHE:-/opt/librdkafka-tests}
TREE=$CACHE/$LIBRDKAFKA_VERSION
STAMP=$TREE/.built

if [ -e "$STAMP" ] && [ -x "$TREE/tests/test-runner" ]; then
    ln -sfn "$LIBRDKAFKA_VERSION" "$CACHE/current"
    exit 0
fi

# Build tools and the compression libraries the tests exercise (snappy and lz4 are built in).
packages=(make gcc g++ pkg-config zlib1g-dev libzstd-dev)
command -v npm >/dev/null || packages+=(npm)
wanted=()
for p in "${packages[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || wanted+=("$p")
done
if [ "${#wanted[@]}" -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >/dev/null
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
# No TLS, SASL/GSSAPI or HTTP: the broker under test speaks PLAINTEXT only. (The logs are not
# named configure.*: mklove would load such a file as a configure module.)
./configure --no-download --disable-ssl --disable-gssapi --disable-curl >"$TREE/setup-configure.log" 2>&1 || {
    tail -40 "$TREE/setup-configure.log" >&2
    exit 1
}
start=$SECONDS
nice -n 10 make -j2 libs >"$TREE/setup-build.log" 2>&1 &&
    nice -n 10 make -j2 -C tests build >>"$TREE/setup-build.log" 2>&1 || {
    tail -60 "$TREE/setup-build.log" >&2
    exit 1
}
touch "$STAMP"
ln -sfn "$LIBRDKAFKA_VERSION" "$CACHE/current"
echo "librdkafka-tests: built librdkafka $LIBRDKAFKA_VERSION and its test runner in $TREE ($((SECONDS - start)) s)"
