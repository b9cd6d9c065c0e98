"""Cluster and config administration against Apache Kafka 4.3.1: DescribeCluster,
DescribeLogDirs, ElectLeaders, DescribeConfigs (topics, the broker, groups), AlterConfigs and
IncrementalAlterConfigs, at every version we serve. Each answer is compared field by field.

Kafka's oracle is shared by the whole run: broker settings are only ever changed with
validate_only, so no other test sees them change."""

import dataclasses
import os

import pytest

from protocol.api_keys import ApiKey
from tests.oracle.steps import create_topic, req, settled, sub, unique, versions
from tests.oracle.test_data import P, TS, batch, produce_body

DC, DLD, EL = ApiKey.DESCRIBE_CLUSTER, ApiKey.DESCRIBE_LOG_DIRS, ApiKey.ELECT_LEADERS
DCF, AC, IAC = ApiKey.DESCRIBE_CONFIGS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = range(4)
NODE = "1"                    # both brokers run as node 1 (tests/conftest.py)


# --- DescribeCluster ------------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(DC))
async def test_describe_cluster(oracle, version):
    await oracle.call(DC, version, req(DC, include_cluster_authorized_operations=False), what="plain")
    await oracle.call(DC, version, req(DC, include_cluster_authorized_operations=True), what="with operations")
    if version >= 1:
        await oracle.call(DC, version, req(DC, endpoint_type=2), what="asking for a controller")
        await oracle.call(DC, version, req(DC, endpoint_type=5), what="an unknown endpoint type")
    if version >= 2:
        await oracle.call(DC, version, req(DC, include_fenced_brokers=True), what="with fenced brokers")


# --- DescribeLogDirs ------------------------------------------------------------------------

def machine_free(answer, prefix: str):
    """A DescribeLogDirs answer without what belongs to the machine (the directory's path, its
    file system's size and free space) and with this test's topics alone."""
    return dataclasses.replace(answer, results=tuple(dataclasses.replace(
        r, log_dir="<dir>", total_bytes=-1 if r.total_bytes == -1 else "<bytes>",
        usable_bytes=-1 if r.usable_bytes == -1 else "<bytes>",
        topics=tuple(sorted((t for t in r.topics if t.name.startswith(prefix)), key=lambda t: t.name)))
        for r in answer.results))


@pytest.mark.parametrize("version", versions(DLD))
async def test_describe_log_dirs(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name, partitions=2)
    await oracle.call(P, 9, produce_body(9, name, None, {0: batch([b"a", b"b"], timestamp=TS)}))

    async def compare(topics, what):
        ours, kafka = await oracle.both(DLD, version, req(DLD, topics=topics))
        # partitions listed in the order of Kafka's hash maps: compared as sets
        oracle.compare(DLD, version, machine_free(ours, name), machine_free(kafka, name), what=what,
                       unordered=("partitions",))
    await compare(None, "every partition")
    topic = sub(DLD, "DescribableLogDirTopic", topic=name, partitions=(0, 1, 7))
    await compare((topic,), "two partitions and one the topic does not have")
    await compare((sub(DLD, "DescribableLogDirTopic", topic=name + "-unknown", partitions=(0,)),), "an unknown topic")
    await compare((), "no topics")


# --- ElectLeaders ---------------------------------------------------------------------------

@pytest.mark.parametrize("version", versions(EL))
async def test_elect_leaders(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name, partitions=2)

    def elect(topics, election=0):
        return req(EL, election_type=election, timeout_ms=10000, topic_partitions=None if topics is None else tuple(
            sub(EL, "TopicPartitions", topic=t, partitions=tuple(ps)) for t, ps in topics))
    await oracle.call(EL, version, elect([(name, [0, 1])]), what="preferred, already the leaders")
    await oracle.call(EL, version, elect([(name, [5])]), what="a partition the topic does not have")
    await oracle.call(EL, version, elect([(name + "-unknown", [0])]), what="an unknown topic")
    await oracle.call(EL, version, elect([]), what="no partitions")
    if version >= 1:
        await oracle.call(EL, version, elect([(name, [0])], election=1), what="unclean")
        await oracle.call(EL, version, elect([(name, [0])], election=3), what="an unknown election type")


# --- DescribeConfigs ------------------------------------------------------------------------

def describe(*resources, synonyms=False, documentation=False):
    return req(DCF, include_synonyms=synonyms, include_documentation=documentation, resources=tuple(
        sub(DCF, "DescribeConfigsResource", resource_type=kind, resource_name=name, configuration_keys=keys)
        for kind, name, keys in resources))


def without_documentation(answer):
    """groupbroker's documentation of each config is its own, not Kafka's text: compared only
    for being there or not."""
    return dataclasses.replace(answer, results=tuple(dataclasses.replace(r, configs=tuple(
        dataclasses.replace(c, documentation=None if c.documentation is None else "<documented>")
        for c in r.configs)) for r in answer.results))


async def described(oracle, version, body, what, **compared):
    """DescribeConfigs compared once both show the configs as they are now (Kafka's broker learns
    of a change a moment after its controller answers it)."""
    await settled(oracle, DCF, version, body, what=what, prepare=without_documentation, **compared)


@pytest.mark.parametrize("version", versions(DCF))
async def test_describe_topic_configs(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name, configs=[("retention.ms", "3600000"), ("cleanup.policy", "compact,delete"),
                                              ("min.insync.replicas", "1")])
    await described(oracle, version, describe((TOPIC, name, None)), "every config")
    await described(oracle, version, describe((TOPIC, name, None), synonyms=True), "with synonyms")
    await described(oracle, version, describe((TOPIC, name, ("retention.ms", "segment.bytes", "no.such.config")),
                                              synonyms=True, documentation=version >= 3), "some configs, documented")
    await described(oracle, version, describe((TOPIC, name + "-unknown", None)), "an unknown topic")
    await described(oracle, version, describe((TOPIC, "bad name!", None)), "an invalid topic name")
    await described(oracle, version, describe((TOPIC, name, ("retention.ms",)), (TOPIC, name + "-unknown", None)),
                    what="a topic and an unknown one")
    await described(oracle, version, describe((3, "x", None)), "an unknown resource type")


#: broker settings that differ between the two brokers by design, left out of the comparison:
#: log.dirs (each broker's own directory: test_describe_log_dirs_setting compares the rest of
#: it), and those only the test set on Kafka's command line
#: (apache_kafka/process.py KAFKA_TEST_SETTINGS: Kafka's replication factors of its
#: internal topics must be 1 on a single broker; groupbroker's defaults are Kafka's)
MACHINE_SETTINGS = {"log.dirs", "offsets.topic.replication.factor"}


@pytest.mark.parametrize("version", versions(DCF))
async def test_describe_broker_configs(oracle, version):
    # every setting groupbroker lists: Kafka lists hundreds more, which we do not have
    ours = await oracle.ours.client.call(DCF, version, describe((BROKER, NODE, None)))
    names = tuple(sorted(c.name for c in ours.results[0].configs if c.name not in MACHINE_SETTINGS))
    # Kafka lists its settings in the order of a hash map of all ~340: ours follow the same
    # table, but settings in one bucket come in each broker's own order of definition
    await described(oracle, version, describe((BROKER, NODE, names)), "groupbroker's settings",
                    unordered=("configs",))
    await described(oracle, version, describe((BROKER, NODE, names), synonyms=True, documentation=version >= 3),
                    "with synonyms and documentation", unordered=("configs",))
    await described(oracle, version, describe((BROKER, "", None)), "the cluster's dynamic defaults")
    await described(oracle, version, describe((BROKER, "7", None)), "another broker id")
    await described(oracle, version, describe((BROKER, "one", None)), "a broker id that is no number")
    await described(oracle, version, describe((BROKER_LOGGER, "7", None)), "the loggers of another broker")
    await described(oracle, version, describe((BROKER_LOGGER, "", None)), "the loggers of no broker")


@pytest.mark.parametrize("version", versions(DCF))
async def test_describe_log_dirs_setting(oracle, version):
    """log.dirs: each broker's own data directory (groupbroker's given by --data-dir), a static
    setting; compared but for the path itself."""
    body = describe((BROKER, NODE, ("log.dirs",)), synonyms=True, documentation=version >= 3)
    answers = await oracle.both(DCF, version, body)
    entries = [a.results[0].configs[0] for a in answers]
    assert all(os.path.isdir(e.value) for e in entries), entries

    def pathless(answer):
        entry = answer.results[0].configs[0]
        entry = dataclasses.replace(entry, value="<dir>", documentation=None, synonyms=tuple(
            dataclasses.replace(s, value="<dir>") for s in entry.synonyms))
        return dataclasses.replace(answer, results=(dataclasses.replace(answer.results[0], configs=(entry,)),))
    oracle.compare(DCF, version, *map(pathless, answers), what="log.dirs")


@pytest.mark.parametrize("version", versions(DCF))
async def test_describe_group_configs(oracle, request, version):
    group = unique(request)
    keys = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms")
    await described(oracle, version, describe((GROUP, group, keys), synonyms=True), "a group's configs")


# --- AlterConfigs / IncrementalAlterConfigs -------------------------------------------------

def alter(*resources, validate_only=False):
    return req(AC, validate_only=validate_only, resources=tuple(
        sub(AC, "AlterConfigsResource", resource_type=kind, resource_name=name, configs=tuple(
            sub(AC, "AlterableConfig", name=k, value=v) for k, v in configs))
        for kind, name, configs in resources))


def incremental(*resources, validate_only=False):
    return req(IAC, validate_only=validate_only, resources=tuple(
        sub(IAC, "AlterConfigsResource", resource_type=kind, resource_name=name, configs=tuple(
            sub(IAC, "AlterableConfig", name=k, config_operation=op, value=v) for k, op, v in configs))
        for kind, name, configs in resources))


@pytest.mark.parametrize("version", versions(AC))
async def test_alter_configs(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name)
    await oracle.call(AC, version, alter((TOPIC, name, [("retention.ms", "1000")])), what="a topic config")
    await described(oracle, 4, describe((TOPIC, name, ("retention.ms", "cleanup.policy"))), "after the change")
    await oracle.call(AC, version, alter((TOPIC, name, [("cleanup.policy", "compact")]), validate_only=True),
                      what="validate only")
    await oracle.call(AC, version, alter((TOPIC, name, [("no.such.config", "1")])), what="an unknown config")
    await oracle.call(AC, version, alter((TOPIC, name, [("retention.ms", "soon")])), what="a value of the wrong type")
    await oracle.call(AC, version, alter((TOPIC, name, [("retention.ms", None)])), what="a null value")
    await oracle.call(AC, version, alter((TOPIC, name, [("retention.ms", "1"), ("retention.ms", "2")])),
                      what="a config twice")
    await oracle.call(AC, version, alter((TOPIC, name + "-unknown", [("retention.ms", "1")])), what="an unknown topic")
    await oracle.call(AC, version, alter((TOPIC, "bad name!", [("retention.ms", "1")])), what="an invalid topic name")
    await oracle.call(AC, version, alter((TOPIC, "", [("retention.ms", "1")])), what="the default topic")
    # Not compared: a resource named twice. Kafka 4.3.1 never answers that request; groupbroker
    # answers INVALID_REQUEST "Each resource must appear at most once."
    await oracle.call(AC, version, alter((BROKER, NODE, [("log.cleaner.backoff.ms", "20000")]), validate_only=True),
                      what="a dynamic broker setting, validate only")
    await oracle.call(AC, version, alter((BROKER, NODE, [("num.partitions", "3")]), validate_only=True),
                      what="a read-only broker setting")
    await oracle.call(AC, version, alter((BROKER, "7", [("log.cleaner.backoff.ms", "1")]), validate_only=True),
                      what="another broker")
    await oracle.call(AC, version, alter((BROKER_LOGGER, NODE, [("root", "INFO")]), validate_only=True),
                      what="loggers")
    await oracle.call(AC, version, alter((5, "x", [("a", "b")])), what="an unknown resource type")
    await described(oracle, 4, describe((TOPIC, name, ("retention.ms", "cleanup.policy"))), "at the end")


@pytest.mark.parametrize("version", versions(IAC))
async def test_incremental_alter_configs(oracle, request, version):
    name = unique(request)
    await create_topic(oracle, name)
    change = lambda *configs, topic=name, **kw: incremental((TOPIC, topic, list(configs)), **kw)  # noqa: E731
    await oracle.call(IAC, version, change(("retention.ms", SET, "1000"), ("cleanup.policy", APPEND, "compact")),
                      what="set and append")
    await described(oracle, 4, describe((TOPIC, name, ("retention.ms", "cleanup.policy"))), "after the change")
    await oracle.call(IAC, version, change(("cleanup.policy", SUBTRACT, "delete"), ("retention.ms", DELETE, None)),
                      what="subtract and delete")
    await described(oracle, 4, describe((TOPIC, name, ("retention.ms", "cleanup.policy"))), "after the second change")
    await oracle.call(IAC, version, change(("retention.ms", APPEND, "5")), what="append to a config no list")
    await oracle.call(IAC, version, change(("retention.ms", 7, "5")), what="an unknown operation")
    await oracle.call(IAC, version, change(("no.such.config", SET, "5")), what="an unknown config")
    await oracle.call(IAC, version, change(("no.such.config", DELETE, None)), what="delete an unknown config")
    await oracle.call(IAC, version, change(("retention.ms", SET, None)), what="set a null value")
    await oracle.call(IAC, version, change(("segment.bytes", SET, "10")), what="a value out of range")
    await oracle.call(IAC, version, change(("retention.ms", SET, "1"), topic=name + "-unknown"), what="an unknown topic")
    await oracle.call(IAC, version, change(("retention.ms", SET, "1"), validate_only=True), what="validate only")
    await oracle.call(IAC, version, incremental((BROKER, NODE, [("log.cleaner.backoff.ms", SET, "20000")]),
                                                validate_only=True), what="a dynamic broker setting")
    await oracle.call(IAC, version, incremental((BROKER, NODE, [("min.insync.replicas", SET, "1")]),
                                                validate_only=True), what="the broker's min.insync.replicas")
    await oracle.call(IAC, version, incremental((BROKER, "", [("min.insync.replicas", DELETE, None)]),
                                                validate_only=True), what="the cluster's min.insync.replicas")
    await oracle.call(IAC, version, incremental((BROKER, NODE, [("num.partitions", SET, "3")]), validate_only=True),
                      what="a read-only broker setting")
    await oracle.call(IAC, version, incremental((GROUP, unique(request, "-g"), [
        ("consumer.session.timeout.ms", SET, "50000")]), validate_only=True), what="a group config")
    await oracle.call(IAC, version, incremental((GROUP, unique(request, "-g"), [("no.such", SET, "1")]),
                                                validate_only=True), what="an unknown group config")
