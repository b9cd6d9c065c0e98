"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, as a single-node Kafka 4 answers them.

Topic resources carry the configs of :mod:`topic_log.configs`: described with their source
and synonyms (Kafka's ConfigHelper), altered after Kafka's broker-side checks (duplicate
resources and keys, null values: INVALID_REQUEST) and the controller's (the whole resulting
override set validated: INVALID_CONFIG; then the topic's existence). Broker resources describe
this node's settings; none of them can be changed while it runs.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter

import trio

from coordinator.group_configs import GROUP_CONFIGS, InvalidGroupConfig, validate_group_configs
from coordinator.java_order import grown_capacity, iteration_order, string_hash
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from topic_log import TopicStore, UnknownTopicOrPartition
from topic_log import configs as topic_configs
from topic_log.configs import DEFAULT_CONFIG, STATIC_BROKER_CONFIG, InvalidConfig
from topic_log.store import validate_topic_name
from topic_log.errors import InvalidTopic
from log_store.files import atomic_write

from broker.config import BrokerConfig
from broker.data.errors import cut

log = logging.getLogger("groupbroker.data")
E = ErrorCode
DescribeConfigs = RESPONSES[ApiKey.DESCRIBE_CONFIGS].cls
AlterConfigs = RESPONSES[ApiKey.ALTER_CONFIGS].cls
IncrementalAlterConfigs = RESPONSES[ApiKey.INCREMENTAL_ALTER_CONFIGS].cls
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
SET, DELETE, APPEND, SUBTRACT = range(4)
_OPERATIONS = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
#: Kafka's answer to a request it cannot even partition (an unknown resource type)
_MALFORMED = ("This most likely occurs because of a request being malformed by the client library or "
              "the message was sent to an incompatible broker. See the broker logs for more details.")

#: This broker's settings DescribeConfigs lists (Kafka name, default, read-only, config type);
#: the topic defaults' own broker settings come from topic_log/configs.py.
_BROKER_SETTINGS = (
    ("num.partitions", "1", True, 3), ("default.replication.factor", "1", True, 3),
    ("auto.create.topics.enable", "true", True, 1), ("delete.topic.enable", "true", True, 1),
    ("log.dirs", None, True, 7), ("log.retention.check.interval.ms", "300000", True, 5),
    ("log.cleaner.enable", "true", True, 1), ("log.cleaner.backoff.ms", "15000", False, 5),
    ("socket.request.max.bytes", "104857600", True, 3), ("connections.max.idle.ms", "600000", True, 5),
    ("fetch.max.bytes", "57671680", True, 3), ("offsets.topic.num.partitions", "50", True, 3),
    ("offsets.topic.replication.factor", "3", True, 4), ("offsets.retention.minutes", "10080", True, 3),
    ("offsets.retention.check.interval.ms", "600000", True, 5), ("offset.metadata.max.bytes", "4096", True, 3),
    ("group.initial.rebalance.delay.ms", "3000", True, 3), ("group.min.session.timeout.ms", "6000", True, 3),
    ("group.max.session.timeout.ms", "1800000", True, 3), ("group.max.size", "2147483647", True, 3),
    ("transaction.state.log.num.partitions", "50", True, 3),
    ("transaction.max.timeout.ms", "900000", True, 3),
)
#: What each setting above, and the node's id, means (DescribeConfigs' documentation); the topic
#: defaults' settings are documented by their topic config.
_BROKER_DOCS = {
    "num.partitions": "How many partitions a topic gets when its creation does not say.",
    "default.replication.factor": "How many replicas a topic gets when its creation does not say.",
    "auto.create.topics.enable": "Whether a Metadata request for an unknown topic may create it.",
    "delete.topic.enable": "Whether DeleteTopics may delete topics.",
    "log.dirs": "The directory the broker keeps its data in.",
    "log.retention.check.interval.ms": "How often segments are checked against the retention settings.",
    "log.cleaner.enable": "Whether the log cleaner compacts topics whose cleanup policy says so.",
    "log.cleaner.backoff.ms": "How long the log cleaner sleeps when no log needs cleaning.",
    "socket.request.max.bytes": "The largest request the broker reads.",
    "connections.max.idle.ms": "How long a connection may stay silent before the broker closes it.",
    "fetch.max.bytes": "The most record bytes one Fetch answer carries.",
    "offsets.topic.num.partitions": "How many partitions the committed offsets (and groups) are spread over.",
    "offsets.topic.replication.factor": "How many replicas the committed offsets are kept in.",
    "offsets.retention.minutes": "How long the offsets of an empty group are kept.",
    "offsets.retention.check.interval.ms": "How often expired offsets are looked for.",
    "offset.metadata.max.bytes": "The longest metadata string a committed offset may carry.",
    "group.initial.rebalance.delay.ms": "How long a new classic group waits for more members before its first "
                                        "rebalance ends.",
    "group.min.session.timeout.ms": "The shortest session timeout a classic group member may ask for.",
    "group.max.session.timeout.ms": "The longest session timeout a classic group member may ask for.",
    "group.max.size": "The most members a classic group may have.",
    "transaction.state.log.num.partitions": "How many partitions the transactions' state is spread over.",
    "transaction.max.timeout.ms": "The longest transaction timeout a producer may ask for.",
    "node.id": "This node's id in the cluster.",
    "broker.id": "This broker's id: its node id.",
    # group configs
    "consumer.heartbeat.interval.ms": "How often the members of a consumer group send heartbeats.",
    "consumer.session.timeout.ms": "How long a consumer group member may stay silent before it is removed.",
    "consumer.assignment.interval.ms": "How often a consumer group's target assignment may be recomputed.",
}

#: Broker settings Kafka changes while it runs (DynamicBrokerConfig): the topic defaults' own
#: settings, these, and every ssl./sasl./listener.name. setting. groupbroker stores and shows
#: them; of these, only the topic defaults change what the broker does.
_DYNAMIC = {"log.cleaner.threads", "log.cleaner.io.max.bytes.per.second", "log.cleaner.dedupe.buffer.size",
            "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor", "log.cleaner.backoff.ms",
            "num.io.threads", "num.network.threads", "num.replica.fetchers",
            "num.recovery.threads.per.data.dir", "background.threads", "max.connections",
            "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connection.creation.rate",
            "producer.id.expiration.ms", "transaction.partition.verification.enable", "listeners",
            "advertised.listeners", "listener.security.protocol.map", "metric.reporters",
            "follower.replication.throttled.rate", "leader.replication.throttled.rate"}
_DYNAMIC_PREFIXES = ("ssl.", "sasl.", "listener.name.")
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, GROUP_CONFIG = 2, 3, 8
_MIN_ISR = "min.insync.replicas"

class ConfigApis:
    def __init__(self, store: TopicStore, config: BrokerConfig, node_ids: list[int]):
        self.store, self.config, self.node_ids = store, config, node_ids
        self.props = config.props
        self._altering = trio.Lock()
        self.dynamic = DynamicConfigs(os.path.join(config.data_dir, DYNAMIC_FILE))
        defaults = self.dynamic.scope("default")
        if "min.insync.replicas" not in defaults:
            # A Kafka 4 cluster's first controller sets the cluster-level min.insync.replicas (to
            # the static value) as it enables eligible leader replicas (KIP-966), so every topic
            # shows it as a dynamic default; it cannot be removed afterwards.
            self.dynamic.set("default", {**defaults, "min.insync.replicas": self.props.get("min.insync.replicas", "1")})
        self._reconfigure()

    # --- DescribeConfigs ----------------------------------------------------------------------
    async def describe_configs(self, ctx, req):
        result = DescribeConfigs.DescribeConfigsResult
        if any(r.resource_type not in (TOPIC, BROKER, BROKER_LOGGER, GROUP) for r in req.resources):
            return DescribeConfigs(results=tuple(
                result(error_code=E.INVALID_REQUEST, error_message=_MALFORMED, resource_type=r.resource_type,
                       resource_name=r.resource_name) for r in req.resources))
        results = []
        for r in req.resources:
            try:
                entries = self._entries(r, ctx.version, req)
                results.append(result(error_code=E.NONE, error_message="", resource_type=r.resource_type,
                                      resource_name=r.resource_name, configs=tuple(entries)))
            except _Failed as e:
                results.append(result(error_code=e.code, error_message=e.message,
                                      resource_type=r.resource_type, resource_name=r.resource_name))
        return DescribeConfigs(results=tuple(results))

    def _entries(self, r, version: int, req) -> list:
        wanted = set(r.configuration_keys or ())
        if r.resource_type == TOPIC:
            rows = _in_kafka_order(self._topic_rows(r.resource_name), grown_capacity(len(topic_configs.CONFIGS)))
        elif r.resource_type == BROKER:
            rows = self._broker_rows(r.resource_name)
            rows = _in_kafka_order(rows, _BROKER_TABLE) if r.resource_name else rows
        elif r.resource_type == GROUP:
            rows = _in_kafka_order(self._group_rows(r.resource_name), _GROUP_TABLE)
        else:
            rows = self._logger_rows(r.resource_name)
        entry = DescribeConfigs.DescribeConfigsResult.DescribeConfigsResourceResult
        synonym = entry.DescribeConfigsSynonym
        return [entry(name=name, value=value, read_only=read_only, config_source=source, is_sensitive=False,
                      synonyms=tuple(synonym(name=n, value=v, source=s) for n, v, s in synonyms)
                      if req.include_synonyms else (),
                      config_type=type_ if version >= 3 else 0,
                      documentation=doc if getattr(req, "include_documentation", False) else None)
                for name, value, read_only, source, synonyms, type_, doc in rows
                if not wanted or name in wanted]

    def _topic_rows(self, name: str) -> list[tuple]:
        try:
            validate_topic_name(name)
            topic = self.store.topic(name)
        except InvalidTopic as e:
            raise _Failed(E.INVALID_TOPIC_EXCEPTION, str(e)) from None
        except UnknownTopicOrPartition:
            raise _Failed(E.UNKNOWN_TOPIC_OR_PARTITION, "") from None
        return [(e.name, e.value, False, e.source, e.synonyms, e.type, e.doc)
                for e in topic_configs.describe(topic.configs, self.layers())]

    def _broker_rows(self, name: str) -> list[tuple]:
        if name == "":                              # the cluster-wide dynamic defaults alone
            return [(n, v, False, DYNAMIC_DEFAULT_BROKER_CONFIG, ((n, v, DYNAMIC_DEFAULT_BROKER_CONFIG),),
                     _setting_type(n), _broker_doc(n)) for n, v in sorted(self.dynamic.scope("default").items())]
        self._check_broker_id(name, " or empty string,")
        settings = {n: (default, read_only, type_) for n, default, read_only, type_ in _BROKER_SETTINGS}
        for d in topic_configs.CONFIGS.values():
            for synonym in d.synonyms:         # only the first of a topic config's can change
                settings[synonym] = (topic_configs.broker_default(synonym), synonym != d.synonyms[0],
                                     topic_configs.INT if synonym in topic_configs.COARSE_SYNONYMS else d.type)
        node = str(int(name))
        # a KRaft node's id is always set: a static setting, broker.id following it (default -1)
        settings.update({"node.id": (None, True, 3), "broker.id": ("-1", True, 3)})
        started_with = {n: node for n in ("node.id", "broker.id") if n not in self.props}
        if "log.dirs" not in self.props and "log.dir" not in self.props:     # --data-dir, or its default
            started_with["log.dirs"] = self.config.data_dir
        layers = [*self.layers(), (started_with, STATIC_BROKER_CONFIG)]
        rows = []
        for n, (default, read_only, type_) in settings.items():
            chain = [(n, values[n], source) for values, source in layers if n in values]
            if default is not None:
                chain.append((n, default, DEFAULT_CONFIG))
            rows.append((n, chain[0][1] if chain else None, read_only and not _dynamic(n),
                         chain[0][2] if chain else DEFAULT_CONFIG, tuple(chain), type_, _broker_doc(n)))
        return rows

    def _group_rows(self, group: str) -> list[tuple]:
        overrides = self.dynamic.scope("groups").get(group, {})
        rows = []
        for name, broker_name, default, type_ in GROUP_CONFIGS:
            chain = [(name, overrides[name], GROUP_CONFIG)] if name in overrides else []
            if broker_name in self.props:
                chain.append((broker_name, self.props[broker_name], STATIC_BROKER_CONFIG))
            chain.append((broker_name or name, default, DEFAULT_CONFIG))
            rows.append((name, chain[0][1], False, chain[0][2], tuple(chain), type_, _BROKER_DOCS.get(name)))
        return rows

    def _logger_rows(self, name: str) -> list[tuple]:
        if name in ("", None):
            raise _Failed(E.INVALID_REQUEST, "Broker id must not be empty")
        self._check_broker_id(name, "")
        loggers = ["root", *sorted(n for n in logging.root.manager.loggerDict if n.startswith("groupbroker"))]
        return [(n, logging.getLevelName(logging.getLogger(None if n == "root" else n).getEffectiveLevel()),
                 False, 6, (), 0, None) for n in loggers]

    def _check_broker_id(self, name: str, or_empty: str, kind: str = "Broker") -> None:
        """ConfigHelper's check of the broker named (``kind`` "Node": ConfigAdminManager's, for
        AlterConfigs and IncrementalAlterConfigs)."""
        try:
            broker = int(name)
        except ValueError:
            raise _Failed(E.INVALID_REQUEST, f"{kind} id must be an integer, but it is: {name}") from None
        if broker not in self.node_ids:
            expected = " or ".join(map(str, self.node_ids))
            raise _Failed(E.INVALID_REQUEST, f"Unexpected broker id, expected {expected}{or_empty} "
                                             f"but received {name}")

    # --- AlterConfigs / IncrementalAlterConfigs --------------------------------------------------
    async def alter_configs(self, ctx, req):
        """The given set replaces the resource's overrides."""
        return AlterConfigs(responses=tuple(await self._alter(
            req, AlterConfigs.AlterConfigsResourceResponse,
            lambda current, r: {c.name: c.value for c in r.configs})))

    async def incremental_alter_configs(self, ctx, req):
        """SET, DELETE, APPEND and SUBTRACT, one config at a time, over the current overrides."""
        return IncrementalAlterConfigs(responses=tuple(await self._alter(
            req, IncrementalAlterConfigs.AlterConfigsResourceResponse, _incremental)))

    async def _alter(self, req, response, change) -> list:
        seen = Counter((r.resource_type, r.resource_name) for r in req.resources)
        out = []
        async with self._altering:
            for r in req.resources:
                try:
                    if seen[(r.resource_type, r.resource_name)] > 1:
                        raise _Failed(E.INVALID_REQUEST, "Each resource must appear at most once.")
                    await self._alter_one(r, change, req.validate_only)
                    out.append(response(error_code=E.NONE, error_message=None, resource_type=r.resource_type,
                                        resource_name=r.resource_name))
                except _Failed as e:
                    out.append(response(error_code=e.code, error_message=e.message,
                                        resource_type=r.resource_type, resource_name=r.resource_name))
        return out

    async def _alter_one(self, r, change, validate_only: bool) -> None:
        names = [c.name for c in r.configs]
        if len(set(names)) != len(names):
            raise _Failed(E.INVALID_REQUEST, "Error due to duplicate config keys")
        nulls = [c.name for c in r.configs if c.value is None and getattr(c, "config_operation", SET) != DELETE]
        if nulls:
            raise _Failed(E.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
        if r.resource_type == BROKER:
            await self._alter_broker(r, change, validate_only)
            return
        if r.resource_type == GROUP:
            await self._alter_group(r, change, validate_only)
            return
        if r.resource_type != TOPIC:
            raise _Failed(E.INVALID_REQUEST, f"Unknown resource type {r.resource_type}")
        if r.resource_name == "":
            raise _Failed(E.INVALID_REQUEST, "Default topic resources are not allowed.")
        try:
            validate_topic_name(r.resource_name)
        except InvalidTopic as e:
            raise _Failed(E.INVALID_TOPIC_EXCEPTION, str(e)) from None
        try:
            topic = self.store.topic(r.resource_name)
        except UnknownTopicOrPartition:
            topic = None
        current = dict(topic.configs) if topic is not None else {}
        try:
            wanted = topic_configs.validate(change(current, r))
        except InvalidConfig as e:
            raise _Failed(E.INVALID_CONFIG, str(e)) from None
        if topic is None:
            raise _Failed(E.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{r.resource_name}' does not exist.")
        if not validate_only and wanted != current:
            await trio.to_thread.run_sync(self.store.set_configs, r.resource_name, wanted)


    async def _alter_broker(self, r, change, validate_only: bool) -> None:
        """Kafka keeps dynamic broker settings (per broker, or cluster-wide for the name "");
        the others cannot change while it runs."""
        if r.resource_name:
            self._check_broker_id(r.resource_name, ",", kind="Node")
        fixed = [c.name for c in r.configs if not _dynamic(c.name)]
        if fixed:                   # a Java HashSet of their names
            shown = iteration_order(list(dict.fromkeys(fixed)), string_hash, grown_capacity(len(set(fixed))))
            raise _Failed(E.INVALID_REQUEST, f"Cannot update these configs dynamically: [{', '.join(shown)}]")
        listed = next((c for c in r.configs if getattr(c, "config_operation", SET) in (APPEND, SUBTRACT)), None)
        if listed is not None:
            raise _Failed(E.INVALID_CONFIG, f"Config value {_OPERATIONS[listed.config_operation].lower()} "
                                            f"is not allowed for config key: {listed.name}")
        scope = "broker" if r.resource_name else "default"
        current = dict(self.dynamic.scope(scope))
        wanted = change(current, r)
        # Kafka's controller with eligible leader replicas on (KIP-966): min.insync.replicas is
        # the cluster's alone
        removed = _MIN_ISR in current and _MIN_ISR not in wanted
        if scope == "broker" and (removed or any(c.name == _MIN_ISR and c.value is not None for c in r.configs)):
            raise _Failed(E.INVALID_CONFIG, f"Broker-level {_MIN_ISR} cannot be altered while ELR is enabled.")
        if scope == "default" and removed:
            raise _Failed(E.INVALID_CONFIG, f"Cluster-level {_MIN_ISR} cannot be removed while ELR is enabled.")
        if not validate_only:
            await trio.to_thread.run_sync(self.dynamic.set, scope, wanted)
            self._reconfigure()

    async def _alter_group(self, r, change, validate_only: bool) -> None:
        known = {name for name, *_ in GROUP_CONFIGS}
        unknown = next((c.name for c in r.configs if c.name not in known), None)
        if unknown is not None:
            raise _Failed(E.INVALID_CONFIG, f"Unknown group config name: {unknown}")
        groups = dict(self.dynamic.scope("groups"))
        wanted = change(dict(groups.get(r.resource_name, {})), r)
        try:
            validate_group_configs(wanted, self.config.coordinator)
        except InvalidGroupConfig as e:
            raise _Failed(E.INVALID_CONFIG, str(e)) from None
        if not validate_only:
            groups[r.resource_name] = wanted
            await trio.to_thread.run_sync(self.dynamic.set, "groups", groups)

    def layers(self) -> list[tuple[dict[str, str], int]]:
        """This broker's settings with their source, highest first."""
        return [(self.dynamic.scope("broker"), DYNAMIC_BROKER_CONFIG),
                (self.dynamic.scope("default"), DYNAMIC_DEFAULT_BROKER_CONFIG),
                (self.props, STATIC_BROKER_CONFIG)]

    def _reconfigure(self) -> None:
        """Topic defaults come from the static settings under the dynamic ones."""
        self.store.set_broker_props({name: value for values, _ in reversed(self.layers())
                                     for name, value in values.items()})


#: The tables of the hash maps Kafka 4.3 lists a broker's and a group's configs from (its
#: KafkaConfig has some 340 settings, its GroupConfig 17): our settings, a part of them, come in
#: their order.
_BROKER_TABLE, _GROUP_TABLE = 512, 32


def _in_kafka_order(rows: list[tuple], table: int) -> list[tuple]:
    """``rows`` (name first) as Kafka lists configs: AbstractConfig.nonInternalValues, a HashMap
    of ``table`` buckets filled in definition order (ConfigHelperUtils.createResponseConfig)."""
    order = {name: i for i, name in enumerate(iteration_order([row[0] for row in rows], string_hash, table))}
    return sorted(rows, key=lambda row: order[row[0]])


def _setting_type(name: str) -> int:
    """A broker setting's config type (STRING for one we do not know)."""
    known = next((type_ for n, _, _, type_ in _BROKER_SETTINGS if n == name), None)
    if known is not None:
        return known
    if name in topic_configs.COARSE_SYNONYMS:
        return topic_configs.INT
    d = next((d for d in topic_configs.CONFIGS.values() if name in d.synonyms), None)
    return topic_configs.STRING if d is None else d.type


def _broker_doc(name: str) -> str | None:
    """A broker setting's documentation: its own, or that of the topic config it is the default of."""
    if name in _BROKER_DOCS:
        return _BROKER_DOCS[name]
    d = next((d for d in topic_configs.CONFIGS.values() if name in d.synonyms), None)
    if d is None:
        return None
    unit = f" (in {name.rsplit('.', 1)[-1]})" if name in topic_configs.COARSE_SYNONYMS else ""
    return f"The default of the topic config {d.name}{unit}: {d.doc}"


def _dynamic(name: str) -> bool:
    return name in _DYNAMIC or name.startswith(_DYNAMIC_PREFIXES) or name in _TOPIC_DEFAULT_SETTINGS


#: the broker settings behind the topic defaults that change while Kafka runs: the first
#: synonym of each topic config (ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS)
_TOPIC_DEFAULT_SETTINGS = {d.synonyms[0] for d in topic_configs.CONFIGS.values() if d.synonyms}
#: Where the dynamic broker and group configs are kept, in the data dir.
DYNAMIC_FILE = "dynamic.configs.json"


class DynamicConfigs:
    """Dynamic broker settings (per broker and cluster default) and group configs, kept in one
    small JSON file replaced atomically (Kafka keeps them in its metadata log)."""

    def __init__(self, path: str):
        self.path = path
        self._scopes: dict[str, dict] = {"broker": {}, "default": {}, "groups": {}}
        try:
            with open(path, encoding="utf-8") as f:
                self._scopes.update(json.load(f))
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as e:
            log.error("%s unreadable (%s): dynamic configs start empty", path, e)

    def scope(self, name: str) -> dict:
        return self._scopes[name]

    def set(self, name: str, values: dict) -> None:
        scopes = {**self._scopes, name: values}
        atomic_write(self.path, json.dumps(scopes, sort_keys=True))
        self._scopes = scopes


def _incremental(current: dict[str, str], r) -> dict[str, str]:
    out = dict(current)
    for c in r.configs:
        if c.config_operation == SET:
            out[c.name] = c.value
        elif c.config_operation == DELETE:
            out.pop(c.name, None)
        elif c.config_operation in (APPEND, SUBTRACT):
            d = topic_configs.CONFIGS.get(c.name)
            if d is None or d.type != topic_configs.LIST:
                raise InvalidConfig(f"Can't {_OPERATIONS[c.config_operation]} to key {c.name} because "
                                    "its type is not LIST.")
            items = [i for i in out.get(c.name, d.default).split(",") if i]
            given = [i.strip() for i in c.value.split(",") if i.strip()]
            if c.config_operation == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            out[c.name] = ",".join(items)
        else:
            # Kafka finds no OpType for it and fails on the null: UNKNOWN_SERVER_ERROR
            raise _Failed(E.UNKNOWN_SERVER_ERROR, None)
    return out


class _Failed(Exception):
    """One resource's error answer."""

    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code, self.message = code, None if message is None else cut(message)
