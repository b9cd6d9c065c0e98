"""The pinned Kafka's jars: resolved by Maven from Maven Central once per machine, then reused.

``pom.xml`` beside this file names Kafka's broker, its tools and a log4j binding; Maven's
``dependency:copy-dependencies`` copies them and everything they pull in into one folder, the
classpath that ``java`` runs ``kafka.Kafka`` from. The folder is filled in a temporary place and
renamed into the cache, so an interrupted fetch never leaves half a classpath behind.
``python -m apache_kafka`` fills the cache (CI's setup does, before the tests run).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

KAFKA_VERSION = "4.3.1"
POM = Path(__file__).with_name("pom.xml")
#: the file in the jar folder that names the pom it was filled from
STAMP = ".pom-sha256"


class KafkaUnavailable(RuntimeError):
    """Java, Maven or the pinned Kafka's jars cannot be had on this machine."""


def cache_dir() -> Path:
    """Where the jars live: ``$GROUPBROKER_KAFKA_HOME``, else ``~/.cache/groupbroker/kafka-<v>``."""
    configured = os.environ.get("GROUPBROKER_KAFKA_HOME")
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "groupbroker" / f"kafka-{KAFKA_VERSION}"


def java() -> str:
    found = shutil.which("java")
    if found is None:
        raise KafkaUnavailable("running Apache Kafka needs Java 17 or newer: no `java` on PATH")
    return found


def kafka_classpath() -> str:
    """The classpath of the pinned Kafka, fetched with Maven first if this machine has none.

    The folder carries the digest of the pom it was filled from, so a cache filled before the
    pom named more artefacts is filled again rather than used without them."""
    lib = cache_dir() / "lib"
    stamp = lib / STAMP
    if not stamp.exists() or stamp.read_text() != pom_digest():
        fetch(lib)
    return str(lib / "*")


def pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def fetch(lib: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable(f"fetching Apache Kafka {KAFKA_VERSION} needs Maven: no `mvn` on PATH")
    lib.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="lib-", dir=lib.parent))
    try:
        done = subprocess.run([mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies",
                               "-DincludeScope=runtime", f"-DoutputDirectory={staging}"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise KafkaUnavailable(f"Maven could not fetch Apache Kafka {KAFKA_VERSION}:\n"
                                   f"{(done.stdout + done.stderr)[-3000:]}")
        (staging / STAMP).write_text(pom_digest())
        shutil.rmtree(lib, ignore_errors=True)
        staging.rename(lib)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
