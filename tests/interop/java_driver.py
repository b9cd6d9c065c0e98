"""Issue 27: Kafka's own Java client (kafka-clients 4.3.1) as a test driver.

``tests/interop/clients/java/src/JavaScenarios.java`` is compiled with ``javac`` against the jars
of the oracle's cache (``apache_kafka.artefacts.kafka_classpath``) once per source version, into
``<cache>/java-interop/<hash of the sources>/``, so reruns and CI reuse it. One run is one JVM: a
scenario against one broker, printing one JSON document of what the application observed.
:func:`run_both` runs it against groupbroker and against Apache Kafka at once (two JVMs in
parallel) and :func:`normalise` takes away what may differ between two brokers: the explicit
lists ``VOLATILE_KEYS`` and ``VOLATILE_TEXT`` below.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from apache_kafka.artefacts import KafkaUnavailable, cache_dir, kafka_classpath
from tests.support.processes import REPO, missing

SOURCE = REPO / "tests" / "interop" / "clients" / "java"
#: what every Java program under clients/ is compiled with (its JSON writer)
COMMON = REPO / "tests" / "interop" / "clients" / "common"
#: kafka-clients and what it needs at run time, plus a log4j binding for its log (on stderr)
JARS = ("kafka-clients-*.jar", "lz4-java-*.jar", "snappy-java-*.jar", "zstd-jni-*.jar", "slf4j-api-*.jar",
        "log4j-api-*.jar", "log4j-core-*.jar", "log4j-slf4j2-impl-*.jar")
#: a JVM that starts fast and stays small: two of them run at once on CI's 2 cores
JVM_FLAGS = ("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss512k")


def client_jars() -> list[Path]:
    try:
        lib = Path(kafka_classpath()).parent
    except KafkaUnavailable as e:
        missing(str(e))
    jars = []
    for pattern in JARS:
        found = sorted(lib.glob(pattern))
        if not found:
            missing(f"{pattern} is not in {lib} (python -m apache_kafka fills it)")
        jars.append(found[-1])
    return jars


def all_jars() -> list[Path]:
    """Every jar of the pinned Kafka: broker, tools, Streams and Connect (a JVM that needs more
    than the client takes them all, as Kafka's own scripts do with its libs/ folder)."""
    try:
        return sorted(Path(kafka_classpath()).parent.glob("*.jar"))
    except KafkaUnavailable as e:
        missing(str(e))


def compiled(source: Path = SOURCE, main: str = "JavaScenarios", jars: list[Path] | None = None) -> str:
    """The classpath to run ``main`` of ``source``/src with, compiling it first if this source is
    new: against ``jars`` (the client's by default), into a cache folder named by the sources'
    digest."""
    javac = shutil.which("javac")
    if javac is None:
        missing("the Java client's tests need a JDK 17: no `javac` on PATH")
    jars = client_jars() if jars is None else jars
    sources = sorted((source / "src").glob("*.java")) + sorted(COMMON.glob("*.java"))
    digest = hashlib.sha256()
    for path in sources + sorted(source.glob("*.properties")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(" ".join(j.name for j in jars).encode())
    home = cache_dir().parent / "java-interop"
    out = home / f"{source.name}-{digest.hexdigest()[:16]}"
    classpath = os.pathsep.join([str(out)] + [str(j) for j in jars])
    if (out / f"{main}.class").exists():
        return classpath
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="build-", dir=home))
    try:
        done = subprocess.run([javac, "-encoding", "UTF-8", "--release", "17", "-nowarn", "-d", str(staging),
                               "-cp", os.pathsep.join(str(j) for j in jars), *map(str, sources)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"javac failed:\n{done.stdout}{done.stderr}"
        try:
            staging.rename(out)
        except OSError:                     # another session compiled the same source meanwhile
            if not (out / f"{main}.class").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return classpath


def run(classpath: str, bootstrap: str, scenario: str, *args: str, prefix: str, log: Path,
        timeout: float = 150) -> dict:
    """One JVM: ``scenario`` against the broker at ``bootstrap``; the JSON it printed."""
    java = shutil.which("java")
    if java is None:
        missing("the Java client's tests need Java 17: no `java` on PATH")
    cmd = [java, *JVM_FLAGS, f"-Dlog4j2.configurationFile={SOURCE / 'log4j2.properties'}",
           "-cp", classpath, "JavaScenarios", scenario, bootstrap, prefix, *args]
    with open(log, "w") as err:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"{scenario} {' '.join(args)} against {bootstrap} exited {done.returncode}:\n"
                             f"{log.read_text()[-6000:]}")
    log.with_suffix(".json").write_text(done.stdout)        # kept beside the log for a failure's reader
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_both(classpath: str, groupbroker: str, kafka: str, scenario: str, *args: str, tmp_path: Path):
    """The scenario against groupbroker and Apache Kafka at once: (groupbroker's, Kafka's)."""
    prefix = f"java-{scenario}-{'-'.join(a.lower() for a in args)}-{uuid.uuid4().hex[:6]}"
    with ThreadPoolExecutor(2) as pool:
        ours = pool.submit(run, classpath, groupbroker, scenario, *args, prefix=prefix,
                           log=tmp_path / "groupbroker-client.log")
        theirs = pool.submit(run, classpath, kafka, scenario, *args, prefix=prefix,
                             log=tmp_path / "kafka-client.log")
        return ours.result(), theirs.result()


#: keys whose values differ between any two brokers, or any two runs: generated ids, hosts,
#: the coordinator's node, and times
VOLATILE_KEYS = frozenset({"t", "member_id", "host", "cluster_id", "topic_id", "producer_id",
                           "start_time", "coordinator_id", "controller"})
#: text inside strings that differs likewise (exception messages quote ids and addresses)
VOLATILE_TEXT = (
    (re.compile(r"\b(c\d|s\d|slow|other|consumer|producer)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
     r"\1-<member id>"),
    (re.compile(r"\b[0-9A-Za-z_-]{22}\b(?=[^0-9A-Za-z_-]|$)"), "<uuid>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"(127\.0\.0\.1|localhost):\d+"), "<host:port>"),
    (re.compile(r"(producerId|producer id|ProducerId)([=: ]+)\d+"), r"\1\2<id>"),
)


def normalise(doc):
    if isinstance(doc, dict):
        return {k: ("<volatile>" if k in VOLATILE_KEYS else normalise(v)) for k, v in doc.items()}
    if isinstance(doc, list):
        return [normalise(v) for v in doc]
    if isinstance(doc, str):
        for pattern, replacement in VOLATILE_TEXT:
            doc = pattern.sub(replacement, doc)
        return doc
    return doc


def differences(ours, theirs, path: str = "") -> list[str]:
    """Where two normalised documents differ, one line each (empty: the same)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(set(ours) | set(theirs)):
            if key not in ours or key not in theirs:
                out.append(f"{path}.{key}: only {'groupbroker' if key in ours else 'Kafka'} has it")
            else:
                out += differences(ours[key], theirs[key], f"{path}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(ours, theirs)) for d in differences(a, b, f"{path}[{i}]")]
    if ours != theirs:
        return [f"{path}: groupbroker {json.dumps(ours)[:600]} / Kafka {json.dumps(theirs)[:600]}"]
    return []


def assert_same(ours, theirs, what: str) -> None:
    diff = differences(normalise(ours), normalise(theirs), what)
    assert not diff, "groupbroker and Apache Kafka 4.3.1 differ:\n" + "\n".join(diff)
