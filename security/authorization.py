"""Kafka's authorization checks, API by API, in KafkaApis' order: each request is checked
against the authorizer before its handler sees it; a denied whole request gets the API's own
error answer, and a request denied in part is served for the allowed part with the denied part
answered TOPIC_AUTHORIZATION_FAILED (or the group's, or the transactional id's, error) beside it.
Topics a principal may not DESCRIBE are left out of what lists them (Metadata for all topics,
OffsetFetch of all partitions), so they cannot be told from topics that do not exist.

Each API's declaration (its ``ApiSpec``) names its check: a method of :class:`Authorization`
here, or one that :func:`topics_of`, :func:`cluster` or :func:`configs` makes; each is called as
``check(authorization, ctx, request, route)``."""

from __future__ import annotations

import dataclasses

from protocol.api_keys import ApiKey
from protocol.error_messages import default_message
from protocol.errors import ErrorCode as E
from protocol.messages import RESPONSES
from protocol.registry import API_TABLE
from protocol.wire import ZERO_UUID

from coordinator.errors import GroupError
from coordinator.streams.validation import check_topology_topics, topology_topics

from security.acls import CLUSTER_NAME, Authorizer, Operation, ResourceType, host_of

NOT_ASKED = -2147483648
TOPIC, GROUP, CLUSTER, TXN = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                              ResourceType.TRANSACTIONAL_ID)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE,
                                                Operation.ALTER, Operation.DESCRIBE)
#: a config resource type -> the ACL resource it is checked on, and Kafka's default message
CONFIG_RESOURCES = {2: (TOPIC, "Topic authorization failed."), 4: (CLUSTER, "Cluster authorization failed."),
                    8: (CLUSTER, "Cluster authorization failed."), 32: (GROUP, "Group authorization failed.")}
#: a denied resource type -> the error Kafka answers it with
DENIED = {TOPIC: E.TOPIC_AUTHORIZATION_FAILED, GROUP: E.GROUP_AUTHORIZATION_FAILED,
          CLUSTER: E.CLUSTER_AUTHORIZATION_FAILED, TXN: E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}


class Authorization:
    def __init__(self, authorizer: Authorizer, topic_name, topic_exists, auto_create: bool, failed):
        self.authorizer = authorizer
        self.failed = failed                  # (api key, version, request, error) -> its error answer
        self.topic_name = topic_name          # a topic id -> its name (None if unknown)
        self.topic_exists = topic_exists      # a topic name -> whether it exists
        self.auto_create = auto_create        # auto.create.topics.enable

    def allowed(self, ctx, operation, resource_type, name: str, log_denied: bool = True) -> bool:
        return self.authorizer.authorize(ctx.principal, host_of(ctx), operation, resource_type, name,
                                         API_TABLE[ctx.api_key].name, log_denied)

    async def handle(self, ctx, body, route, check):
        return await route(ctx, body) if check is None else await check(self, ctx, body, route)

    # --- helpers -------------------------------------------------------------------------------
    def _refused(self, ctx, body, error):
        return self.failed(ctx.api_key, ctx.version, body, error)

    async def _split(self, ctx, body, route, attr: str, denied: list, allowed: list, answer_attr: str,
                     error=E.TOPIC_AUTHORIZATION_FAILED, refused_first: bool = False):
        """Serve the allowed items of ``body.<attr>``; answer the denied ones with ``error``,
        after the others (or before them, ``refused_first``)."""
        if not denied:
            return await route(ctx, body)
        refused = self._refused(ctx, dataclasses.replace(body, **{attr: tuple(denied)}), error)
        if not allowed:
            return refused
        answer = await route(ctx, dataclasses.replace(body, **{attr: tuple(allowed)}))
        if answer is None:                       # acks=0
            return None
        first, then = (refused, answer) if refused_first else (answer, refused)
        return dataclasses.replace(answer, **{answer_attr: tuple(getattr(first, answer_attr))
                                              + tuple(getattr(then, answer_attr))})

    def _by_topic(self, ctx, topics, name_of, operation) -> tuple[list, list]:
        allowed, denied = [], []
        for topic in topics:
            (allowed if self.allowed(ctx, operation, TOPIC, name_of(topic) or "") else denied).append(topic)
        return allowed, denied

    def _by_known_topic(self, ctx, topics, name_of, operation) -> tuple[list, list]:
        """As :meth:`_by_topic` for topics named by id: one whose id is unknown (``name_of``
        gives None) is let through, as Kafka answers it UNKNOWN_TOPIC_ID before authorizing."""
        allowed, denied = [], []
        for topic in topics:
            name = name_of(topic)
            (allowed if name is None or self.allowed(ctx, operation, TOPIC, name) else denied).append(topic)
        return allowed, denied

    def _by_name(self, ctx, names, operation, resource_type) -> tuple[list, list]:
        """``names`` (groups, transactional ids) split into allowed and denied, each checked once."""
        allowed, denied = [], []
        for name in names:
            (allowed if self.allowed(ctx, operation, resource_type, name) else denied).append(name)
        return allowed, denied

    def _with_group_operations(self, ctx, answer):
        """Each described group's authorized operations (those that were described)."""
        return dataclasses.replace(answer, groups=tuple(
            dataclasses.replace(g, authorized_operations=self.operations(ctx, GROUP, g.group_id))
            if g.error_code == E.NONE else g for g in answer.groups))

    def cluster_refused(self, ctx, body):
        """The answer of a cluster-level API refused CLUSTER_AUTHORIZATION_FAILED."""
        if ctx.api_key == ApiKey.ADD_PARTITIONS_TO_TXN:          # v4+, broker to broker: one top-level code
            return RESPONSES[ctx.api_key].cls(error_code=E.CLUSTER_AUTHORIZATION_FAILED)
        return self._refused(ctx, body, E.CLUSTER_AUTHORIZATION_FAILED)

    # --- groups ----------------------------------------------------------------------------
    async def group_read(self, ctx, body, route):
        if not self.allowed(ctx, READ, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def consumer_group_heartbeat(self, ctx, body, route):
        """READ on the group; Kafka 4 also wants DESCRIBE on every topic subscribed by name."""
        if not self.allowed(ctx, READ, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        if any(not self.allowed(ctx, DESCRIBE, TOPIC, name) for name in body.subscribed_topic_names or ()):
            return self._refused(ctx, body, E.TOPIC_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    #: ShareGroupHeartbeat: as ConsumerGroupHeartbeat
    share_group_heartbeat = consumer_group_heartbeat

    async def streams_group_heartbeat(self, ctx, body, route):
        """READ on the group; then, for a topology whose topics Kafka accepts (else the
        coordinator answers why not), DESCRIBE on every topic it names."""
        if not self.allowed(ctx, READ, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        if body.topology is not None:
            try:
                check_topology_topics(body)
            except GroupError:
                return await route(ctx, body)
            if any(not self.allowed(ctx, DESCRIBE, TOPIC, name) for name in topology_topics(body.topology)):
                return self._refused(ctx, body, E.TOPIC_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def offset_commit(self, ctx, body, route):
        """READ on the group, then on each topic: an OffsetCommit's refused topics are answered
        first, as Kafka's API layer answers its errors before the coordinator's results; from
        v10 a topic id not known here is not refused (the group router answers it
        UNKNOWN_TOPIC_ID, as Kafka checks it first)."""
        if not self.allowed(ctx, READ, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        if ctx.api_key == ApiKey.OFFSET_COMMIT and ctx.version >= 10:
            allowed, denied = self._by_known_topic(ctx, body.topics, lambda t: self.topic_name(t.topic_id), READ)
        else:
            allowed, denied = self._by_topic(ctx, body.topics, lambda t: t.name, READ)
        return await self._split(ctx, body, route, "topics", denied, allowed, "topics",
                                 refused_first=ctx.api_key == ApiKey.OFFSET_COMMIT)

    async def txn_offset_commit(self, ctx, body, route):
        if not self.allowed(ctx, WRITE, TXN, body.transactional_id):
            return self._refused(ctx, body, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return await self.offset_commit(ctx, body, route)

    async def offset_delete(self, ctx, body, route):
        if not self.allowed(ctx, DELETE, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        allowed, denied = self._by_topic(ctx, body.topics, lambda t: t.name, READ)
        if denied:                             # Kafka answers the denied topics beside the rest
            answer = await route(ctx, dataclasses.replace(body, topics=tuple(allowed)))
            topic = type(answer).OffsetDeleteResponseTopic
            return dataclasses.replace(answer, topics=tuple(answer.topics) + tuple(
                topic(name=t.name, partitions=tuple(topic.OffsetDeleteResponsePartition(
                    partition_index=p.partition_index, error_code=E.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions))
                for t in denied))
        return await route(ctx, body)

    async def offset_fetch(self, ctx, body, route):
        if ctx.version >= 8:
            return await self._offset_fetch_groups(ctx, body, route)
        if not self.allowed(ctx, DESCRIBE, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        if body.topics is None:               # every committed offset: the undescribable left out
            answer = await route(ctx, body)
            return dataclasses.replace(answer, topics=tuple(
                t for t in answer.topics if self.allowed(ctx, DESCRIBE, TOPIC, t.name, log_denied=False)))
        allowed, denied = self._by_topic(ctx, body.topics, lambda t: t.name, DESCRIBE)
        answer = await route(ctx, dataclasses.replace(body, topics=tuple(allowed)))
        topic = type(answer).OffsetFetchResponseTopic
        return dataclasses.replace(answer, topics=tuple(answer.topics) + tuple(
            topic(name=t.name, partitions=tuple(topic.OffsetFetchResponsePartition(
                partition_index=p, committed_offset=-1, error_code=E.TOPIC_AUTHORIZATION_FAILED)
                for p in t.partition_indexes)) for t in denied))

    async def _offset_fetch_groups(self, ctx, body, route):
        """v8+: each group on its own (DESCRIBE on it), then its topics as above; from v10 by
        id, where an id not known here is not refused (the group router answers it
        UNKNOWN_TOPIC_ID, as Kafka checks it first). A group whose fetch failed is answered
        with its error alone, as Kafka does."""
        def name_of(topic):
            return topic.name or self.topic_name(topic.topic_id) or ""
        allowed_groups, denied_groups, denied_topics = [], [], {}
        for group in body.groups:
            if not self.allowed(ctx, DESCRIBE, GROUP, group.group_id):
                denied_groups.append(group.group_id)
                continue
            if group.topics is not None and ctx.version >= 10:
                kept, denied_topics[group.group_id] = self._by_known_topic(
                    ctx, group.topics, lambda t: self.topic_name(t.topic_id), DESCRIBE)
                group = dataclasses.replace(group, topics=tuple(kept))
            elif group.topics is not None:
                kept, denied_topics[group.group_id] = self._by_topic(ctx, group.topics, name_of, DESCRIBE)
                group = dataclasses.replace(group, topics=tuple(kept))
            allowed_groups.append(group)
        answer = await route(ctx, dataclasses.replace(body, groups=tuple(allowed_groups))) if allowed_groups \
            else RESPONSES[ApiKey.OFFSET_FETCH].cls(groups=())
        group_cls = type(answer).OffsetFetchResponseGroup
        topic = group_cls.OffsetFetchResponseTopics
        groups = []
        for g in answer.groups:
            if g.error_code != E.NONE:
                groups.append(g)
                continue
            topics = tuple(t for t in g.topics if self.allowed(ctx, DESCRIBE, TOPIC, name_of(t), log_denied=False)) \
                if g.group_id not in denied_topics else tuple(g.topics) + tuple(
                    topic(name=t.name, topic_id=t.topic_id, partitions=tuple(topic.OffsetFetchResponsePartitions(
                        partition_index=p, committed_offset=-1, error_code=E.TOPIC_AUTHORIZATION_FAILED)
                        for p in t.partition_indexes)) for t in denied_topics[g.group_id])
            groups.append(dataclasses.replace(g, topics=topics))
        groups += [group_cls(group_id=g, topics=(), error_code=E.GROUP_AUTHORIZATION_FAILED) for g in denied_groups]
        return dataclasses.replace(answer, groups=tuple(groups))

    async def find_coordinator(self, ctx, body, route):
        if body.key_type == 2:             # share-state keys: brokers' (CLUSTER_ACTION from v6)
            if ctx.version >= 6 and not self.allowed(ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
                return self.cluster_refused(ctx, body)
            return await route(ctx, body)
        resource = TXN if body.key_type == 1 else GROUP
        if ctx.version < 4:
            if not self.allowed(ctx, DESCRIBE, resource, body.key):
                return RESPONSES[ApiKey.FIND_COORDINATOR].cls(
                    error_code=DENIED[resource], error_message=default_message(DENIED[resource]),
                    node_id=-1, host="", port=-1)
            return await route(ctx, body)
        allowed, denied = self._by_name(ctx, body.coordinator_keys, DESCRIBE, resource)
        if not denied:
            return await route(ctx, body)
        # Kafka authorizes each key where it looks it up: the answers stay in request order
        found = iter((await route(ctx, dataclasses.replace(body, coordinator_keys=tuple(allowed)))).coordinators
                     if allowed else ())
        coordinator = RESPONSES[ApiKey.FIND_COORDINATOR].cls.Coordinator
        refused = set(denied)
        return RESPONSES[ApiKey.FIND_COORDINATOR].cls(coordinators=tuple(
            coordinator(key=key, node_id=-1, host="", port=-1, error_code=DENIED[resource], error_message="")
            if key in refused else next(found) for key in body.coordinator_keys))

    async def describe_groups(self, ctx, body, route):
        allowed, denied = self._by_name(ctx, body.groups, DESCRIBE, GROUP)
        answer = await self._split(ctx, body, route, "groups", denied, allowed, "groups", E.GROUP_AUTHORIZATION_FAILED,
                                   refused_first=True)
        if ctx.version >= 3 and body.include_authorized_operations:
            answer = self._with_group_operations(ctx, answer)
        return answer

    async def consumer_group_describe(self, ctx, body, route):
        allowed, denied = self._by_name(ctx, body.group_ids, DESCRIBE, GROUP)
        answer = await self._split(ctx, body, route, "group_ids", denied, allowed, "groups",
                                   E.GROUP_AUTHORIZATION_FAILED, refused_first=True)
        return self._with_group_operations(ctx, answer) if body.include_authorized_operations else answer

    share_group_describe = consumer_group_describe

    async def streams_group_describe(self, ctx, body, route):
        """As ConsumerGroupDescribe; then a group whose topology names a topic the client may
        not describe is answered TOPIC_AUTHORIZATION_FAILED instead."""
        answer = await self.consumer_group_describe(ctx, body, route)
        groups = []
        for g in answer.groups:
            names = [] if g.topology is None else [
                name for s in g.topology.subtopologies or () for name in (
                    *s.source_topics, *s.repartition_sink_topics, *(t.name for t in s.repartition_source_topics),
                    *(t.name for t in s.state_changelog_topics))]
            if any(not self.allowed(ctx, DESCRIBE, TOPIC, name) for name in names):
                g = type(g)(group_id=g.group_id, error_code=E.TOPIC_AUTHORIZATION_FAILED, error_message=(
                    "The described group uses topics that the client is not authorized to describe."))
            groups.append(g)
        return dataclasses.replace(answer, groups=tuple(groups))

    async def describe_share_group_offsets(self, ctx, body, route):
        """DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED for it) and on each topic named
        (else TOPIC_AUTHORIZATION_FAILED for its partitions); of all the group's topics, those
        the client may not describe are left out."""
        cls = RESPONSES[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS].cls
        allowed = [g for g in body.groups if self.allowed(ctx, DESCRIBE, GROUP, g.group_id)]
        answer = await route(ctx, dataclasses.replace(body, groups=tuple(allowed)))
        answered = {g.group_id: g for g in answer.groups}
        groups = []
        for g in body.groups:
            if g.group_id not in answered:
                groups.append(cls.DescribeShareGroupOffsetsResponseGroup(
                    group_id=g.group_id, error_code=E.GROUP_AUTHORIZATION_FAILED, error_message=None))
                continue
            got = answered[g.group_id]
            topics = []
            for t in got.topics:
                if self.allowed(ctx, DESCRIBE, TOPIC, t.topic_name, log_denied=g.topics is not None):
                    topics.append(t)
                elif g.topics is not None:
                    topics.append(dataclasses.replace(t, topic_id=ZERO_UUID, partitions=tuple(
                        dataclasses.replace(p, start_offset=-1, lag=-1, error_code=E.TOPIC_AUTHORIZATION_FAILED)
                        for p in t.partitions)))
            groups.append(dataclasses.replace(got, topics=tuple(topics)))
        return dataclasses.replace(answer, groups=tuple(groups))

    async def delete_share_offsets(self, ctx, body, route):
        """DeleteShareGroupOffsets: DELETE on the group; each topic's READ is the handler's."""
        if not self.allowed(ctx, DELETE, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def share_fetch(self, ctx, body, route):
        """ShareFetch and ShareAcknowledge: READ on the group (a missing group id is the
        handler's INVALID_REQUEST, answered first); each topic's READ is checked as it is read."""
        if body.group_id is not None and not self.allowed(ctx, READ, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def list_groups(self, ctx, body, route):
        answer = await route(ctx, body)
        if self.allowed(ctx, DESCRIBE, CLUSTER, CLUSTER_NAME, log_denied=False):
            return answer
        return dataclasses.replace(answer, groups=tuple(
            g for g in answer.groups if self.allowed(ctx, DESCRIBE, GROUP, g.group_id, log_denied=False)))

    async def delete_groups(self, ctx, body, route):
        allowed, denied = self._by_name(ctx, dict.fromkeys(body.groups_names), DELETE, GROUP)
        return await self._split(ctx, body, route, "groups_names", denied, allowed, "results",
                                 E.GROUP_AUTHORIZATION_FAILED)

    def operations(self, ctx, resource_type, name: str) -> int:
        return self.authorizer.operations(ctx.principal, host_of(ctx), resource_type, name)

    # --- topics ----------------------------------------------------------------------------
    async def metadata(self, ctx, body, route):
        """DESCRIBE on each topic: of all topics, the others are left out; a named one is
        answered TOPIC_AUTHORIZATION_FAILED whether or not it exists. One that does not exist
        and would be created needs CREATE on the cluster or on it."""
        if body.topics is None or (ctx.version == 0 and not body.topics):
            answer = await route(ctx, body)
            topics = [t for t in answer.topics if self.allowed(ctx, DESCRIBE, TOPIC, t.name, log_denied=False)]
        else:
            names = [t.name or self.topic_name(t.topic_id) for t in body.topics]
            creates = self.auto_create and (ctx.version < 4 or body.allow_auto_topic_creation)
            may_create = creates and self.allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME, log_denied=False)
            allowed, denied = [], []
            for topic, name in zip(body.topics, names):
                if name is None:              # an unknown topic id: the data plane says UNKNOWN_TOPIC_ID
                    allowed.append(topic)
                    continue
                ok = self.allowed(ctx, DESCRIBE, TOPIC, name)
                if ok and creates and not may_create and not self.topic_exists(name):
                    ok = self.allowed(ctx, CREATE, TOPIC, name)
                (allowed if ok else denied).append(topic)
            answer = await route(ctx, dataclasses.replace(body, topics=tuple(allowed)))
            refused = self._refused(ctx, dataclasses.replace(body, topics=tuple(denied)), E.TOPIC_AUTHORIZATION_FAILED)
            topics = [*(answer.topics if allowed else ()), *refused.topics]   # v0: () asks for all
        if ctx.version >= 8 and body.include_topic_authorized_operations:
            topics = [dataclasses.replace(t, topic_authorized_operations=self.operations(ctx, TOPIC, t.name))
                      if t.error_code == E.NONE else t for t in topics]
        answer = dataclasses.replace(answer, topics=tuple(topics))
        if 8 <= ctx.version <= 10 and body.include_cluster_authorized_operations:
            answer = dataclasses.replace(answer, cluster_authorized_operations=self._cluster_operations(ctx))
        return answer

    def _cluster_operations(self, ctx) -> int:
        if not self.allowed(ctx, DESCRIBE, CLUSTER, CLUSTER_NAME):
            return 0
        return self.operations(ctx, CLUSTER, CLUSTER_NAME)

    async def describe_cluster(self, ctx, body, route):
        answer = await route(ctx, body)
        if body.include_cluster_authorized_operations:
            answer = dataclasses.replace(answer, cluster_authorized_operations=self._cluster_operations(ctx))
        return answer

    async def produce(self, ctx, body, route):
        if body.transactional_id is not None and _transactional(body) and \
                not self.allowed(ctx, WRITE, TXN, body.transactional_id):
            return None if body.acks == 0 else self._refused(ctx, body, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if ctx.version >= 13:                 # by id: an unknown id is UNKNOWN_TOPIC_ID, never refused
            allowed, denied = self._by_known_topic(ctx, body.topic_data, lambda t: self.topic_name(t.topic_id), WRITE)
        else:
            allowed, denied = self._by_topic(ctx, body.topic_data, lambda t: t.name, WRITE)
        if body.acks == 0 and denied:        # nothing is answered: the allowed part is written
            if allowed:
                await route(ctx, dataclasses.replace(body, topic_data=tuple(allowed)))
            return None
        return await self._split(ctx, body, route, "topic_data", denied, allowed, "responses")

    async def fetch(self, ctx, body, route):
        """READ on each topic is checked by the data plane (:meth:`may_read`), at every fetch for
        every partition it reads, those an incremental fetch session names included."""
        return await route(ctx, body)

    def may_read(self, ctx, topic: str) -> bool:
        """KafkaApis.handleFetchRequest's READ check of one topic a fetch reads."""
        return self.allowed(ctx, READ, TOPIC, topic)

    def denied_creation(self, ctx, names: list[str]) -> list[str]:
        """Of the internal topics a streams group asks for, those the client may not create:
        none with CREATE on the cluster, else those without CREATE on the topic."""
        if self.allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME, log_denied=False):
            return []
        return [name for name in names if not self.allowed(ctx, CREATE, TOPIC, name)]

    async def create_topics(self, ctx, body, route):
        if self.allowed(ctx, CREATE, CLUSTER, CLUSTER_NAME, log_denied=False):
            return await route(ctx, body)
        allowed, denied = self._by_topic(ctx, body.topics, lambda t: t.name, CREATE)
        return await self._split(ctx, body, route, "topics", denied, allowed, "topics")

    async def delete_topics(self, ctx, body, route):
        """DELETE on the cluster covers every topic; else DESCRIBE on each, then DELETE on those
        that exist (so a describable topic that does not exist is still UNKNOWN_TOPIC_OR_PARTITION)."""
        if self.allowed(ctx, DELETE, CLUSTER, CLUSTER_NAME, log_denied=False):
            return await route(ctx, body)

        def may_delete(name: str | None) -> bool:
            if name is None:                  # an unknown topic id: UNKNOWN_TOPIC_ID
                return True
            return self.allowed(ctx, DESCRIBE, TOPIC, name) and (
                not self.topic_exists(name) or self.allowed(ctx, DELETE, TOPIC, name))
        if ctx.version >= 6:
            name_of, attr = (lambda t: t.name or self.topic_name(t.topic_id)), "topics"
        else:
            name_of, attr = (lambda name: name), "topic_names"
        verdicts = [(t, may_delete(name_of(t))) for t in getattr(body, attr)]
        allowed, denied = [t for t, ok in verdicts if ok], [t for t, ok in verdicts if not ok]
        return await self._split(ctx, body, route, attr, denied, allowed, "responses")

    # --- transactions ------------------------------------------------------------------------
    async def init_producer_id(self, ctx, body, route):
        if body.transactional_id is not None:
            if not self.allowed(ctx, WRITE, TXN, body.transactional_id):
                return self._refused(ctx, body, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not (self.allowed(ctx, Operation.IDEMPOTENT_WRITE, CLUSTER, CLUSTER_NAME, log_denied=False)
                  or self.authorizer.allows_some(ctx.principal, host_of(ctx), WRITE, TOPIC)):
            return self._refused(ctx, body, E.CLUSTER_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def transactional_write(self, ctx, body, route):
        if not self.allowed(ctx, WRITE, TXN, body.transactional_id):
            return self._refused(ctx, body, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def add_offsets_to_txn(self, ctx, body, route):
        if not self.allowed(ctx, WRITE, TXN, body.transactional_id):
            return self._refused(ctx, body, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not self.allowed(ctx, READ, GROUP, body.group_id):
            return self._refused(ctx, body, E.GROUP_AUTHORIZATION_FAILED)
        return await route(ctx, body)

    async def write_txn_markers(self, ctx, body, route):
        """ALTER on the cluster (a denial not logged), else CLUSTER_ACTION."""
        if self.allowed(ctx, Operation.ALTER, CLUSTER, CLUSTER_NAME, log_denied=False) or \
                self.allowed(ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
            return await route(ctx, body)
        return self.cluster_refused(ctx, body)

    async def add_partitions_to_txn(self, ctx, body, route):
        """v3 and below (clients): WRITE on the transactional id, then on each topic; if any
        partition is refused, the others are OPERATION_NOT_ATTEMPTED (v4+ is broker to broker:
        CLUSTER_ACTION)."""
        if ctx.version >= 4:
            if not self.allowed(ctx, Operation.CLUSTER_ACTION, CLUSTER, CLUSTER_NAME):
                return self.cluster_refused(ctx, body)
            return await route(ctx, body)
        if not self.allowed(ctx, WRITE, TXN, body.v3_and_below_transactional_id):
            return self._refused(ctx, body, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        topics = body.v3_and_below_topics
        denied = [t for t in topics if t.name.startswith("__") or not self.allowed(ctx, WRITE, TOPIC, t.name)]
        if not denied:
            return await route(ctx, body)
        refused = self._refused(ctx, body, E.OPERATION_NOT_ATTEMPTED)
        failed = self._refused(ctx, dataclasses.replace(body, v3_and_below_topics=tuple(denied)),
                               E.TOPIC_AUTHORIZATION_FAILED)
        denied_names = {t.name for t in denied}
        return dataclasses.replace(refused, results_by_topic_v3_and_below=tuple(
            t for t in refused.results_by_topic_v3_and_below if t.name not in denied_names)
            + tuple(failed.results_by_topic_v3_and_below))

    async def describe_transactions(self, ctx, body, route):
        allowed, denied = self._by_name(ctx, body.transactional_ids, DESCRIBE, TXN)
        answer = await self._split(ctx, body, route, "transactional_ids", denied, allowed, "transaction_states",
                                   E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        return dataclasses.replace(answer, transaction_states=tuple(
            dataclasses.replace(s, topics=tuple(t for t in s.topics if self.allowed(ctx, DESCRIBE, TOPIC, t.topic,
                                                                                    log_denied=False)))
            for s in answer.transaction_states))

    async def list_transactions(self, ctx, body, route):
        answer = await route(ctx, body)
        return dataclasses.replace(answer, transaction_states=tuple(
            s for s in answer.transaction_states
            if self.allowed(ctx, DESCRIBE, TXN, s.transactional_id, log_denied=False)))


def _transactional(body) -> bool:
    """Whether a Produce carries transactional batches (the attributes' bit 4 of any batch)."""
    for topic in body.topic_data:
        for partition in topic.partition_data:
            records = partition.records
            if records and len(records) > 22 and records[22] & 0x10:
                return True
    return False


def topics_of(attr: str, name_attr: str, operation, answer_attr: str):
    """The check of an API whose request lists topics in ``attr`` (each named by ``name_attr``),
    each needing ``operation``; the answer lists them in ``answer_attr``."""
    async def check(self, ctx, body, route):
        allowed, denied = self._by_topic(ctx, getattr(body, attr), lambda t: getattr(t, name_attr), operation)
        return await self._split(ctx, body, route, attr, denied, allowed, answer_attr)
    return check


def cluster(operation):
    """The check of an API that needs ``operation`` on the cluster."""
    async def check(self, ctx, body, route):
        if self.allowed(ctx, operation, CLUSTER, CLUSTER_NAME):
            return await route(ctx, body)
        return self.cluster_refused(ctx, body)
    return check


def configs(operation):
    """Each config resource on its own: a topic's needs the operation on the topic, a
    group's on the group, a broker's (and its loggers') on the cluster."""
    answer_attr = "results" if operation == Operation.DESCRIBE_CONFIGS else "responses"

    async def check(self, ctx, body, route):
        allowed, denied = [], []
        for resource in body.resources:
            kind, name = CONFIG_RESOURCES.get(resource.resource_type, (None, None)), resource.resource_name
            resource_type = kind[0] if kind else None
            if resource_type is None or self.allowed(ctx, operation, resource_type,
                                                     CLUSTER_NAME if resource_type == CLUSTER else name):
                allowed.append(resource)
            else:
                denied.append(resource)
        if not denied:
            return await route(ctx, body)
        answer = await route(ctx, dataclasses.replace(body, resources=tuple(allowed)))
        entry = type(getattr(answer, answer_attr)[0]) if getattr(answer, answer_attr) else \
            getattr(type(answer), "DescribeConfigsResult" if answer_attr == "results" else "AlterConfigsResourceResponse")
        extra = {"configs": ()} if answer_attr == "results" else {}
        return dataclasses.replace(answer, **{answer_attr: tuple(getattr(answer, answer_attr)) + tuple(
            entry(error_code=DENIED[CONFIG_RESOURCES[r.resource_type][0]],
                  error_message=CONFIG_RESOURCES[r.resource_type][1], resource_type=r.resource_type,
                  resource_name=r.resource_name, **extra) for r in denied)})
    return check
