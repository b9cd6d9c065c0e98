"""What the streams-group recipes share (KIP-1071, ``group.protocol=streams``): a word-count
topology (a stateless subtopology that repartitions by word, a stateful one that counts, with
its changelog) and Kafka Streams instances played over raw StreamsGroupHeartbeat requests, so
that every epoch and task on the wire is visible. An instance keeps the tasks of its last answer
and reports them, as Kafka Streams does; asked to revoke tasks, it gives them up at its next
heartbeat unless told to stall."""

from __future__ import annotations

import uuid

from recipe import client, connect, coordinator, make_topic

from protocol import REQUESTS
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode

SGH = REQUESTS[ApiKey.STREAMS_GROUP_HEARTBEAT].cls
IAC = REQUESTS[ApiKey.INCREMENTAL_ALTER_CONFIGS].cls


def word_count(app: str, topic: str):
    sub = SGH.Topology.Subtopology
    info = sub.TopicInfo
    return SGH.Topology(epoch=0, subtopologies=(
        sub(subtopology_id="0", source_topics=(topic,), source_topic_regex=(), state_changelog_topics=(),
            repartition_sink_topics=(f"{app}-words-repartition",), repartition_source_topics=(), copartition_groups=()),
        sub(subtopology_id="1", source_topics=(), source_topic_regex=(), repartition_sink_topics=(),
            repartition_source_topics=(info(name=f"{app}-words-repartition", partitions=0, replication_factor=0,
                                            topic_configs=()),),
            state_changelog_topics=(info(name=f"{app}-counts-changelog", partitions=0, replication_factor=0,
                                         topic_configs=()),), copartition_groups=())))


def streams_app(bootstrap: str, app: str, partitions: int, **configs: str):
    """The application's input topic and its group's configs (``streams_num_standby_replicas="1"``
    sets streams.num.standby.replicas); a raw connection to the group's coordinator."""
    topic = f"{app}-lines"
    make_topic(bootstrap, topic, partitions)
    conn = connect(coordinator(bootstrap, app), client_id="streams-recipe")
    if configs:
        answer = conn.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, IAC(validate_only=False, resources=(
            IAC.AlterConfigsResource(resource_type=32, resource_name=app, configs=tuple(
                IAC.AlterConfigsResource.AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v)
                for k, v in configs.items())),)))
        if answer.responses[0].error_code:
            raise RuntimeError(f"the group configs were refused: {answer.responses[0]}")
    return conn, topic


class Instance:
    """One Kafka Streams instance (one thread: one member of its own process)."""

    def __init__(self, conn, app: str, name: str, topic: str, rebalance_timeout_ms: int = 30000):
        self.conn, self.app, self.name, self.topic = conn, app, name, topic
        self.member_id, self.process_id = f"{name}-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch, self.active, self.standby = 0, set(), set()
        self.stalled = False          # stuck in a revocation: keeps reporting what it must give up
        self.held = (set(), set())    # what it reported while stalled

    def heartbeat(self, *, quiet: bool = False):
        joining = self.epoch == 0
        active, standby = self.held if self.stalled else (self.active, self.standby)
        body = SGH(group_id=self.app, member_id=self.member_id, member_epoch=self.epoch, endpoint_information_epoch=-1,
                   rebalance_timeout_ms=self.rebalance_timeout_ms if joining else -1,
                   topology=word_count(self.app, self.topic) if joining else None,
                   active_tasks=_task_ids(active), standby_tasks=_task_ids(standby), warmup_tasks=(),
                   process_id=self.process_id if joining else None)
        before = (self.epoch, set(active), set(standby))
        answer = self.conn.call(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, body)
        if answer.error_code == ErrorCode.NONE:
            self.epoch = answer.member_epoch
            if answer.active_tasks is not None:
                self.active, self.standby = _tasks(answer.active_tasks), _tasks(answer.standby_tasks)
        if not quiet:
            client(f"{self.name}: StreamsGroupHeartbeat(epoch={before[0]}, active={_names(before[1])}, "
                   f"standby={_names(before[2])}) -> {describe(answer)}")
        return answer

    def leave(self) -> None:
        self.epoch = -1
        self.heartbeat(quiet=True)


def _task_ids(tasks: set) -> tuple:
    by: dict[str, list[int]] = {}
    for s, p in sorted(tasks):
        by.setdefault(s, []).append(p)
    return tuple(SGH.TaskIds(subtopology_id=s, partitions=tuple(ps)) for s, ps in by.items())


def _tasks(task_ids) -> set:
    return {(t.subtopology_id, p) for t in task_ids or () for p in t.partitions}


def _names(tasks) -> list[str]:
    return [f"{s}_{p}" for s, p in sorted(tasks)]


def describe(answer) -> str:
    if answer.error_code:
        return f"error {answer.error_code} ({ErrorCode(answer.error_code).name}): {answer.error_message!r}"
    tasks = "unchanged" if answer.active_tasks is None else \
        f"active {_names(_tasks(answer.active_tasks))}, standby {_names(_tasks(answer.standby_tasks))}"
    status = "".join(f", status {s.status_code} {s.status_detail!r}" for s in answer.status or ())
    return f"OK, epoch {answer.member_epoch}, {tasks}{status}"
