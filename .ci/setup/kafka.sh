#!/usr/bin/env bash
# Apache Kafka 4.3.1, the oracle the test suite compares groupbroker with (tests/oracle/): a JDK 17
# and Maven from Debian if the machine lacks them, then the pinned Kafka's jars from Maven Central
# into the cache that later runs reuse (~/.cache/groupbroker/kafka-4.3.1; Maven's own in ~/.m2).
# In CI a missing Java, Maven or Kafka fails the tests that need them, never skips them.
set -euo pipefail
cd "$(dirname "$0")/../.."

packages=()
command -v javac >/dev/null || packages+=(openjdk-17-jdk-headless)     # the Java client's tests compile
command -v mvn >/dev/null || packages+=(maven)
[ "${#packages[@]}" -eq 0 ] || bash .ci/apt-install "${packages[@]}"
python3 -m apache_kafka
