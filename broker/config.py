"""Broker settings under Kafka's own config names: ``server.properties`` plus ``-o key=value``."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordinator.config import CoordinatorConfig
from coordinator.transactions.config import TransactionConfig
from offsets_log.flush import NEVER, FlushPolicy
from protocol.frames import DEFAULT_MAX_FRAME

from security.limits import ConnectionLimitSettings, LimitError, parse_limits
from security.listeners import Listener, ListenerError, build_listeners

#: the listener settings (security/listeners.py)
LISTENER_NAMES = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map",
                            "controller.listener.names", "connections.max.reauth.ms", "max.connections",
                            "max.connections.per.ip", "max.connections.per.ip.overrides",
                            "max.connection.creation.rate", "authorizer.class.name", "super.users",
                            "allow.everyone.if.no.acl.found"})
#: prefixes of the settings security reads (TLS, SASL, per-listener overrides)
SECURITY_PREFIXES = ("ssl.", "sasl.", "listener.name.")


class ConfigError(ValueError):
    """A config file or override that cannot be used (bad syntax or value)."""


def parse_properties(text: str) -> dict[str, str]:
    """Java-properties subset: ``key=value`` or ``key: value`` lines, ``#``/``!`` comments."""
    props = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ConfigError(f"line {number}: expected key=value, got {raw!r}")
        props[line[:sep].strip()] = line[sep + 1:].strip()
    return props


def command_line_properties(config_file: str | None, overrides: list[str]) -> dict[str, str]:
    """A command's settings: its ``--config`` file's, then its ``-o KEY=VALUE`` ones (which win).
    Raises OSError (the file) or ConfigError."""
    props = {}
    if config_file:
        with open(config_file, encoding="utf-8") as f:
            props.update(parse_properties(f.read()))
    props.update(parse_properties("\n".join(overrides)))
    return props


def _at_least(minimum: int):
    """An int parser that refuses values below ``minimum`` (Kafka's ``atLeast`` validator)."""
    def parse(value: str) -> int:
        number = int(value)
        if number < minimum:
            raise ConfigError(f"must be at least {minimum}")
        return number
    return parse


def _between(low: int, high: int):
    """An int parser that refuses values outside [low, high]."""
    def parse(value: str) -> int:
        number = int(value)
        if not low <= number <= high:
            raise ConfigError(f"must be between {low} and {high}")
        return number
    return parse


def _bool(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ConfigError(f"expected true or false, got {value!r}")
    return value.lower() == "true"


def _cleanup_policy(value: str) -> frozenset[str]:
    """Kafka's cleanup.policy list: compact, delete, or both."""
    policy = frozenset(v.strip() for v in value.split(",") if v.strip())
    if not policy or not policy <= {"compact", "delete"}:
        raise ConfigError(f"expected compact, delete or compact,delete, got {value!r}")
    return policy


def _ratio(value: str) -> float:
    ratio = float(value)
    if not 0 <= ratio <= 1:
        raise ConfigError(f"expected a ratio between 0 and 1, got {value!r}")
    return ratio


@dataclass(frozen=True)
class BrokerConfig:
    #: listeners, advertised.listeners, listener.security.protocol.map (security/listeners.py)
    listeners: tuple[Listener, ...] = field(default_factory=build_listeners)
    data_dir: str = "./groupbroker-data"
    node_id: int = 1                           # a single node's id (a cluster's are 0..nodes-1)
    nodes: int = 1                             # broker nodes in this process (groupbroker serve --nodes)
    cluster_id: str = "groupbroker-local"
    rack: str | None = None                    # broker.rack (in a cluster: a comma-separated list, one per node)
    socket_request_max_bytes: int = DEFAULT_MAX_FRAME
    connections_max_idle_ms: int = 600_000     # negative: never close idle connections (as Kafka)
    connection_failed_authentication_delay_ms: int = 100   # a failed authentication's answer waits
    fetch_max_bytes: int = 55 * 1024 * 1024    # the most a Fetch answer carries, whatever it asks
    auto_create_topics_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1        # replicas of a topic created without a count
    offsets_topic_replication_factor: int = 3  # of __consumer_offsets (at most the node count)
    transaction_state_log_replication_factor: int = 3
    log_segment_bytes: int = 1 << 30
    log_retention_ms: int = 7 * 24 * 3_600_000
    log_retention_bytes: int = -1
    log_cleanup_policy: frozenset[str] = frozenset({"delete"})
    log_retention_check_interval_ms: int = 300_000
    log_initial_task_delay_ms: int = 30_000   # when the first retention check runs after start
    log_cleaner_enable: bool = True
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_delete_retention_ms: int = 86_400_000
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_min_cleanable_ratio: float = 0.5
    log_flush_interval_messages: int = NEVER   # NEVER: acknowledged once written, as Kafka
    log_flush_interval_ms: int | None = None   # None: log.flush.scheduler.interval.ms
    log_flush_scheduler_interval_ms: int = NEVER
    admin_host: str = "127.0.0.1"
    admin_port: int | None = None          # the fault-injection endpoint; None: off, 0: a free port
    journal_enable: bool = True            # the group event journal (broker/journal/recorder.py)
    #: the finalized level of share.version (what formatting a Kafka cluster with
    #: ``--feature share.version=N`` sets): 1, Kafka 4.3's default, serves share groups
    share_version: int = 1
    #: likewise streams.version: 1, Kafka 4.3's default, serves streams groups (KIP-1071)
    streams_version: int = 1
    #: likewise transaction.version: 2, Kafka 4.3's default, makes Kafka 4 clients end every
    #: transaction with an epoch bump (KIP-890); it also decides how the coordinator itself
    #: aborts and which transaction-state record version it writes
    transaction_version: int = 2
    journal_sample_ms: int = 10_000        # how often partitions' log-end offsets are sampled
    journal_commit_interval_ms: int = 1_000  # a member's commits within this are one line
    journal_segment_bytes: int = 64 << 20
    journal_segment_ms: int = 3_600_000
    journal_retention_ms: int = 7 * 86_400_000
    shutdown_grace_s: float = 3.0
    coordinator: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    transactions: TransactionConfig = field(default_factory=TransactionConfig)
    #: max.connections and the other connection limits (security/limits.py)
    limits: ConnectionLimitSettings = field(default_factory=ConnectionLimitSettings)
    #: the Kafka-named settings as given (topic defaults and DescribeConfigs read them)
    props: dict = field(default_factory=dict)

    #: Kafka config name -> (field, parser). Coordinator names are handled by CoordinatorConfig.
    _NAMES = {
        "node.id": ("node_id", int), "broker.id": ("node_id", int),
        "cluster.id": ("cluster_id", str),
        "broker.rack": ("rack", str),
        "socket.request.max.bytes": ("socket_request_max_bytes", int),
        "connections.max.idle.ms": ("connections_max_idle_ms", int),
        "connection.failed.authentication.delay.ms": ("connection_failed_authentication_delay_ms", _at_least(0)),
        "fetch.max.bytes": ("fetch_max_bytes", _at_least(1024)),
        "auto.create.topics.enable": ("auto_create_topics_enable", _bool),
        "num.partitions": ("num_partitions", int),
        "default.replication.factor": ("default_replication_factor", _at_least(1)),
        "offsets.topic.replication.factor": ("offsets_topic_replication_factor", _at_least(1)),
        "transaction.state.log.replication.factor": ("transaction_state_log_replication_factor", _at_least(1)),
        "log.segment.bytes": ("log_segment_bytes", int),
        "log.retention.ms": ("log_retention_ms", int),
        "log.retention.hours": ("log_retention_ms", lambda v: int(v) * 3_600_000),
        "log.retention.bytes": ("log_retention_bytes", int),
        "log.cleanup.policy": ("log_cleanup_policy", _cleanup_policy),
        "log.retention.check.interval.ms": ("log_retention_check_interval_ms", _at_least(1)),
        "log.initial.task.delay.ms": ("log_initial_task_delay_ms", _at_least(0)),
        "log.cleaner.enable": ("log_cleaner_enable", _bool),
        "log.cleaner.backoff.ms": ("log_cleaner_backoff_ms", _at_least(0)),
        "log.cleaner.delete.retention.ms": ("log_cleaner_delete_retention_ms", _at_least(0)),
        "log.cleaner.min.compaction.lag.ms": ("log_cleaner_min_compaction_lag_ms", _at_least(0)),
        "log.cleaner.min.cleanable.ratio": ("log_cleaner_min_cleanable_ratio", _ratio),
        "log.dirs": ("data_dir", str), "log.dir": ("data_dir", str),
        "log.flush.interval.messages": ("log_flush_interval_messages", _at_least(1)),
        "log.flush.interval.ms": ("log_flush_interval_ms", _at_least(0)),
        "log.flush.scheduler.interval.ms": ("log_flush_scheduler_interval_ms", _at_least(0)),
        # groupbroker's own: the fault-injection admin endpoint (broker/faults/endpoint.py)
        "groupbroker.admin.host": ("admin_host", str),
        "groupbroker.admin.port": ("admin_port", int),
        # groupbroker's own: a feature level Kafka sets when it formats its storage
        "groupbroker.feature.share.version": ("share_version", _between(0, 1)),
        "groupbroker.feature.streams.version": ("streams_version", _between(0, 1)),
        "groupbroker.feature.transaction.version": ("transaction_version", _between(0, 2)),
        # groupbroker's own: the group event journal the analytics report reads
        "groupbroker.journal.enable": ("journal_enable", _bool),
        "groupbroker.journal.sample.interval.ms": ("journal_sample_ms", int),
        "groupbroker.journal.commit.interval.ms": ("journal_commit_interval_ms", int),
        "groupbroker.journal.segment.bytes": ("journal_segment_bytes", int),
        "groupbroker.journal.segment.ms": ("journal_segment_ms", int),
        "groupbroker.journal.retention.ms": ("journal_retention_ms", int),
    }

    #: names groupbroker no longer reads -> what to use instead
    _REPLACED = {
        "groupbroker.offsets.fsync": "Kafka's log.flush.interval.messages replaces it: commits are "
                                     "acknowledged once written by default, as in Kafka; "
                                     "log.flush.interval.messages=1 fsyncs every one before its answer",
    }

    @classmethod
    def build(cls, props: dict[str, str], **explicit) -> BrokerConfig:
        """Properties first, then explicit CLI values (which win); unknown names are refused."""
        values: dict = {}
        coordinator_names = CoordinatorConfig.kafka_names()
        transaction_names = TransactionConfig.kafka_names()
        for key, raw in props.items():
            try:
                if key in cls._NAMES:
                    name, parse = cls._NAMES[key]
                    values[name] = parse(raw)
                elif key in cls._REPLACED:
                    raise ConfigError(f"no longer supported: {cls._REPLACED[key]}")
                elif key in LISTENER_NAMES or _is_security_name(key):
                    pass                                 # read below, or by security
                elif key not in coordinator_names and key not in transaction_names:
                    raise ConfigError("unknown config name")
            except ValueError as e:
                raise ConfigError(f"{key}={raw}: {e}") from None
        try:
            values["coordinator"] = CoordinatorConfig.from_properties(
                {k: v for k, v in props.items() if k in coordinator_names})
            values["transactions"] = TransactionConfig.from_properties(
                {k: v for k, v in props.items() if k in transaction_names})
        except ValueError as e:
            raise ConfigError(str(e)) from None
        try:
            values["listeners"] = build_listeners(props, explicit.pop("host", None), explicit.pop("port", None))
            values["limits"] = parse_limits(props, [listener.name for listener in values["listeners"]])
        except (ListenerError, LimitError) as e:
            raise ConfigError(str(e)) from None
        values.update({k: v for k, v in explicit.items() if v is not None})
        idle, delay = (values.get(name, cls.__dataclass_fields__[name].default) for name in
                       ("connections_max_idle_ms", "connection_failed_authentication_delay_ms"))
        if idle >= 0 and delay >= idle:
            raise ConfigError(f"connection.failed.authentication.delay.ms={delay} should always be less than "
                              f"connections.max.idle.ms={idle} to prevent failed authentication responses from "
                              f"timing out")
        if values.get("nodes", 1) < 1:
            raise ConfigError(f"--nodes must be at least 1, got {values['nodes']}")
        return cls(**values, props=dict(props))

    @property
    def features(self) -> dict[str, int]:
        """The finalized feature levels this broker's settings choose."""
        return {"share.version": self.share_version, "streams.version": self.streams_version,
                "transaction.version": self.transaction_version}

    @property
    def host(self) -> str:
        """The first listener's address (the one ``groupbroker serve`` prints)."""
        return self.listeners[0].host

    @property
    def port(self) -> int:
        return self.listeners[0].port

    @property
    def flush_policy(self) -> FlushPolicy:
        return FlushPolicy(self.log_flush_interval_messages, self.log_flush_interval_ms,
                           self.log_flush_scheduler_interval_ms)

    def rack_of(self, index: int) -> str | None:
        """The rack of the ``index``-th node: ``broker.rack`` itself, or its ``index``-th item if
        it lists one per node."""
        if self.rack is None or "," not in self.rack:
            return self.rack
        racks = [r.strip() for r in self.rack.split(",")]
        return racks[index] if index < len(racks) else None



def _is_security_name(key: str) -> bool:
    """Per-listener and TLS/SASL settings, which security reads."""
    return key.startswith(SECURITY_PREFIXES)
