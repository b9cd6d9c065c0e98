"""Group APIs: route each group to its shard's runner; split and merge the multi-group ones.

FindCoordinator names the node that owns the group's shard (in a cluster, the leader of its
``__consumer_offsets`` partition; a transactional id's, of its ``__transaction_state``
partition); any other node answers the group's requests NOT_COORDINATOR, as Kafka does.
DescribeGroups,
DeleteGroups and OffsetFetch v8+ carry several groups: each shard gets the part naming its
groups, the shards work concurrently, and the answers are put back in request order.
ListGroups asks every shard.
"""

from __future__ import annotations

import dataclasses
import logging
from functools import partial
from typing import Callable

import trio

from coordinator.metadata import EMPTY_IMAGE, MetadataImage
from coordinator.responses import error_response, offset_commit_error
from coordinator.java_order import hash_set_order, shard_order
from coordinator.routing import shard_for
from coordinator.share.state import share_state_key
from protocol.api_keys import ApiKey
from protocol.error_messages import default_message
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from broker.cluster.topology import GROUP_TOPIC, NO_LEADER, Topology
from broker.group_runtime.shard_runner import ShardRunner, Ticket

log = logging.getLogger("groupbroker.groups")

FindCoordinatorResponse = RESPONSES[ApiKey.FIND_COORDINATOR].cls
OffsetCommitResponse = RESPONSES[ApiKey.OFFSET_COMMIT].cls
_COMMIT_TOPIC = OffsetCommitResponse.OffsetCommitResponseTopic
_FETCHED_TOPIC = RESPONSES[ApiKey.OFFSET_FETCH].cls.OffsetFetchResponseGroup.OffsetFetchResponseTopics
_DELETE_TOPIC = RESPONSES[ApiKey.OFFSET_DELETE].cls.OffsetDeleteResponseTopic
_TXN_COMMIT_TOPIC = RESPONSES[ApiKey.TXN_OFFSET_COMMIT].cls.TxnOffsetCommitResponseTopic
#: per-partition result classes of OffsetDelete and TxnOffsetCommit
_RESULT_CLASSES = {
    ApiKey.OFFSET_DELETE: (_DELETE_TOPIC, _DELETE_TOPIC.OffsetDeleteResponsePartition),
    ApiKey.TXN_OFFSET_COMMIT: (_TXN_COMMIT_TOPIC, _TXN_COMMIT_TOPIC.TxnOffsetCommitResponsePartition)}
#: the first OffsetCommit and OffsetFetch version naming topics by id (KIP-848)
TOPIC_IDS_SINCE = 10
#: the last OffsetFetch version naming a single group (pipelined, like the other single-group
#: requests that never wait for other members)
SINGLE_GROUP_OFFSET_FETCH = 7


class GroupRouter:
    """``metadata`` gives the topic store's current topics (names, ids, partition counts), which
    OffsetCommit and OffsetFetch are checked against here, as Kafka's API layer checks them
    against its metadata cache."""

    def __init__(self, runners: list[ShardRunner], topology: Topology,
                 partition_exists: Callable[[str, int], bool], txn_partitions: int,
                 metadata: Callable[[], MetadataImage] = lambda: EMPTY_IMAGE,
                 share_state_exists: Callable[[], bool] = lambda: False, streams_topics=None):
        self.runners, self.topology = runners, topology
        #: the internal topics streams groups ask for (broker/data/streams_topics.py)
        self.streams_topics = streams_topics
        self.partition_exists, self.txn_partitions = partition_exists, txn_partitions
        self.metadata = metadata
        #: whether ``__share_group_state`` exists, as Kafka creates it: at the first share state,
        #: or at the first FindCoordinator for a share-state key (which it answers unavailable)
        self.share_state_exists = share_state_exists
        self._share_state_asked = False
        #: (transactional id, producer id, epoch, topic, partition) -> the transaction coordinator's
        #: verdict on whether the partition is in that transaction (set once it exists)
        self.verify_transaction: Callable | None = None
        #: async (transactional id, producer id, epoch, [(topic, partition)]) -> ErrorCode: the
        #: transaction coordinator's add of a TxnOffsetCommit v5's offsets partition
        self.add_to_transaction: Callable | None = None

    def runner_for(self, group_id: str) -> ShardRunner:
        return self.runners[shard_for(group_id, len(self.runners))]

    def _elsewhere(self, ctx, shard: int) -> bool:
        """Whether the shard is coordinated by another node than the one asked."""
        return not self.topology.single and self.topology.coordinator(shard) != ctx.node_id

    def _not_here(self, ctx, request):
        """The request's answer on a node that does not coordinate its group, or None."""
        if not self.topology.single and self._elsewhere(ctx, shard_for(request.group_id, len(self.runners))):
            return error_response(ctx.api_key, ctx.version, request, ErrorCode.NOT_COORDINATOR)
        return None

    async def find_coordinator(self, ctx, request):
        return self._coordinators(ctx.version, request, ctx)

    async def single_group(self, ctx, request):
        """A request that may park in its shard (a JoinGroup or SyncGroup) or leaves a group."""
        if (refused := self._not_here(ctx, request)) is not None:
            return refused
        return await self.runner_for(request.group_id).call(
            ctx.api_key, ctx.version, request, client_id=ctx.client_id,
            client_host=ctx.client_host, barriers=ctx.barriers)

    async def pipelined(self, ctx, request):
        ticket, finish = self.begin(ctx, request)
        return finish(await ShardRunner.answer(ticket, ctx.barriers))

    async def txn_offset_commit(self, ctx, request):
        """From v5 (transaction version 2) the group's ``__consumer_offsets`` partition is added to
        the producer's transaction first, as Kafka's coordinator adds it before it writes (no
        AddOffsetsToTxn came); only when some partition named exists and the group is ours."""
        added = None
        if ctx.version >= TV2_TXN_OFFSET_COMMIT and self.add_to_transaction is not None \
                and self._not_here(ctx, request) is None \
                and any(self.partition_exists(t.name, p.partition_index) for t in request.topics for p in t.partitions):
            added = await self.add_to_transaction(request.transactional_id, request.producer_id,
                                                  request.producer_epoch, [self._offsets_partition(request.group_id)])
        ticket, finish = self.begin(ctx, request, added)
        return finish(await ShardRunner.answer(ticket, ctx.barriers))

    async def streams_group_heartbeat(self, ctx, request):
        """As KafkaApis answers it: the coordinator's answer, then the internal topics it asked
        for created (or refused, or their earlier failure told in its status)."""
        ticket, finish = self.begin(ctx, request)
        response = finish(await ShardRunner.answer(ticket, ctx.barriers))
        if ticket.internal_topics is not None and self.streams_topics is not None:
            response = self.streams_topics.asked(ctx, response, *ticket.internal_topics)
        return response

    async def offset_fetch(self, ctx, request):
        """OffsetFetch names one group before v8 (pipelined), several from v8 on, their topics
        by id from v10 (see :meth:`_offset_fetch_by_id`)."""
        if ctx.version <= SINGLE_GROUP_OFFSET_FETCH:
            return await self.pipelined(ctx, request)
        if ctx.version >= TOPIC_IDS_SINCE:
            return await self._offset_fetch_by_id(ctx, request)
        return await self._split(ctx, request, "groups", lambda g: g.group_id, "groups")

    async def _offset_fetch_by_id(self, ctx, request):
        """Kafka's fetchOffsetsForGroup and fetchAllOffsetsForGroup from v10: the coordinator
        reads the topics it is asked by name; a topic id not known here never reaches it and is
        answered UNKNOWN_TOPIC_ID after the topics it answered, unless it fails the whole group.
        Of all a group's offsets, those of topics that no longer exist are left out (they have
        no id to be named by)."""
        image = self.metadata()
        asked, unknown = [], []
        for group in request.groups:
            missing = []
            if group.topics is not None:
                known = []
                for t in group.topics:
                    found = image.by_id.get(t.topic_id)
                    if found is None:
                        missing.append(t)
                    else:
                        known.append(dataclasses.replace(t, name=found.name))
                group = dataclasses.replace(group, topics=tuple(known))
            asked.append(group)
            unknown.append(missing)
        answer = await self._split(ctx, dataclasses.replace(request, groups=tuple(asked)), "groups",
                                   lambda g: g.group_id, "groups")
        return dataclasses.replace(answer, groups=tuple(
            _fetched_by_id(image, group, sent, missing)
            for group, sent, missing in zip(answer.groups, asked, unknown)))

    def begin(self, ctx, request, added: ErrorCode | None = None) -> tuple[Ticket, Callable]:
        """Submit a pipelined request to its shard; returns its ticket and the function that
        turns the shard's answer into the response (``added``: a TxnOffsetCommit v5's add to its
        transaction, done)."""
        if ctx.api_key == ApiKey.OFFSET_COMMIT:
            return self._begin_commit(ctx, request)
        if (refused := self._not_here(ctx, request)) is not None:
            ticket = Ticket(ctx.api_key, ctx.version, request)
            ticket.settle(refused)
            return ticket, _unchanged
        runner = self.runner_for(request.group_id)
        if ctx.api_key not in _RESULT_CLASSES:          # not TxnOffsetCommit or OffsetDelete
            return runner.submit(ctx.api_key, ctx.version, request, client_id=ctx.client_id,
                                 client_host=ctx.client_host), _unchanged
        # TxnOffsetCommit/OffsetDelete: as Kafka's API layer does, answer partitions that do not
        # exist with UNKNOWN_TOPIC_OR_PARTITION and send only the rest to the coordinator (a
        # TxnOffsetCommit once its transaction is verified). The usual request names only
        # partitions that exist: it goes on as it came.
        exists = self.partition_exists
        whole = all(t.partitions and all(exists(t.name, p.partition_index) for p in t.partitions)
                    for t in request.topics)
        kept = request.topics if whole else tuple(t for t in (dataclasses.replace(t, partitions=tuple(
            p for p in t.partitions if exists(t.name, p.partition_index))) for t in request.topics) if t.partitions)
        finish = _unchanged if whole else partial(_with_unknown_partitions, ctx.api_key, request.topics)
        if ctx.api_key == ApiKey.TXN_OFFSET_COMMIT:
            ticket = Ticket(ctx.api_key, ctx.version, request)
            if not kept:
                ticket.settle(RESPONSES[ctx.api_key].cls())
                return ticket, finish
            unverified = self._unverified(ctx, request) if added is None else \
                None if added == ErrorCode.NONE else verification_error(added, ctx.version)
            if unverified is not None:
                ticket.settle(error_response(ctx.api_key, ctx.version, request, unverified))
                return ticket, _unchanged
        return runner.submit(ctx.api_key, ctx.version, request if whole else dataclasses.replace(request, topics=kept),
                             client_id=ctx.client_id, client_host=ctx.client_host), finish

    def _unverified(self, ctx, request) -> ErrorCode | None:
        """Kafka's verification of a TxnOffsetCommit before its coordinator sees it (KIP-890): the
        group's ``__consumer_offsets`` partition must be in the producer's transaction (added by
        AddOffsetsToTxn). The error the request fails with, or None."""
        if ctx.api_key != ApiKey.TXN_OFFSET_COMMIT or self.verify_transaction is None:
            return None
        error = self.verify_transaction(request.transactional_id, request.producer_id, request.producer_epoch,
                                        *self._offsets_partition(request.group_id))
        return None if error == ErrorCode.NONE else verification_error(error, ctx.version)

    def _offsets_partition(self, group_id: str) -> tuple[str, int]:
        return GROUP_TOPIC, shard_for(group_id, len(self.runners))

    def _begin_commit(self, ctx, request) -> tuple[Ticket, Callable]:
        """Kafka's handleOffsetCommitRequest: the API layer answers what the coordinator must
        not see, topic by topic in request order: (v10) a topic id it does not know,
        UNKNOWN_TOPIC_ID; a topic or partition that does not exist, UNKNOWN_TOPIC_OR_PARTITION.
        The rest goes to the coordinator (not at all if nothing is left, so a commit of no
        partitions changes no group), and its answer is merged after those errors. The usual
        commit has none: it goes on as it came (from v10 with its topics' names)."""
        errors, kept = self._commit_checks(ctx.version, request)
        if errors or ctx.version >= TOPIC_IDS_SINCE:
            request = dataclasses.replace(request, topics=tuple(kept))
        if not kept:
            ticket = Ticket(ctx.api_key, ctx.version, request)
            ticket.settle(OffsetCommitResponse())
        elif self._elsewhere(ctx, shard_for(request.group_id, len(self.runners))):
            ticket = Ticket(ctx.api_key, ctx.version, request)
            ticket.settle(offset_commit_error(request, ErrorCode.NOT_COORDINATOR))
        else:
            ticket = self.runner_for(request.group_id).submit(
                ctx.api_key, ctx.version, request, client_id=ctx.client_id, client_host=ctx.client_host)
        if not errors:
            return ticket, _unchanged
        return ticket, partial(_after_errors, ctx.version, errors)

    def _commit_checks(self, version: int, request) -> tuple[list, list]:
        """[(requested topic, [(partition, error)])] of the partitions answered here, and the
        topics (named) with the partitions left for the coordinator. A topic that exists but
        has no partition left is not sent at all, as in Kafka."""
        image = self.metadata()
        topics, by_id = image.topics, image.by_id if version >= TOPIC_IDS_SINCE else None
        errors, kept = [], []
        for t in request.topics:
            if by_id is not None:
                found = by_id.get(t.topic_id)
                if found is None:
                    errors.append((t, [(p.partition_index, ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partitions]))
                    continue
                t = dataclasses.replace(t, name=found.name)
            else:
                found = topics.get(t.name)
            if found is None:
                errors.append((t, [(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in t.partitions]))
                continue
            present = [p for p in t.partitions if 0 <= p.partition_index < found.num_partitions]
            if len(present) < len(t.partitions):
                errors.append((t, [(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                                   for p in t.partitions if not 0 <= p.partition_index < found.num_partitions]))
                t = dataclasses.replace(t, partitions=tuple(present))
            if t.partitions:
                kept.append(t)
        return errors, kept

    def _coordinators(self, version: int, request, ctx):
        """Groups (key type 0) and transactional ids (1): the node leading the key's partition
        (COORDINATOR_NOT_AVAILABLE while none does). Share-state keys (2, ``group:topic
        id:partition``, what brokers ask from v6; INVALID_REQUEST before, or for a key that is
        not one): the node leading the key's ``__share_group_state`` partition, laid out as the
        offsets topic's, COORDINATOR_NOT_AVAILABLE until that topic exists. A key type Kafka
        does not know fails the whole request with INVALID_REQUEST, each key carrying the
        error's default message. Before v4 the one answer carries its error's default message
        ("NONE" when found)."""
        topology = self.topology
        known = request.key_type in (0, 1, 2)

        def answer(key: str) -> dict:
            key_type = request.key_type
            if not known:
                return dict(error_code=ErrorCode.INVALID_REQUEST, node_id=-1, host="", port=-1,
                            error_message=default_message(ErrorCode.INVALID_REQUEST))
            node = NO_LEADER
            if key_type == 0:
                node = topology.coordinator(shard_for(key, len(self.runners)))
            elif key_type == 1:
                node = topology.transaction_coordinator(shard_for(key, self.txn_partitions))
            elif version >= 6 and share_state_key(key) and self._share_state_topic():
                node = topology.coordinator(shard_for(key, len(self.runners)))
            if key_type == 2 and (version < 6 or not share_state_key(key)):
                error = ErrorCode.INVALID_REQUEST
            elif node == NO_LEADER:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                found = topology.node(node, ctx.listener)
                return dict(error_code=ErrorCode.NONE, node_id=node, host=found.host, port=found.port)
            return dict(error_code=error, node_id=-1, host="", port=-1)

        if version < 4:
            found = answer(request.key)
            return FindCoordinatorResponse(**{**found, "error_message": default_message(found["error_code"])})
        coordinator = FindCoordinatorResponse.Coordinator
        return FindCoordinatorResponse(coordinators=tuple(
            coordinator(key=k, **answer(k)) for k in request.coordinator_keys))

    def _share_state_topic(self) -> bool:
        """Whether ``__share_group_state`` exists; the first ask before it does creates it."""
        if self.share_state_exists() or self._share_state_asked:
            return True
        self._share_state_asked = True
        return False

    async def _split(self, ctx, request, field: str, group_of, result_field: str, order=None):
        """Send each shard the items naming its groups; rebuild the answer in request order, or
        in the order ``order(items, shards)`` gives (the item indexes, as Kafka answers them)."""
        items = getattr(request, field)
        shards = [shard_for(group_of(item), len(self.runners)) for item in items]   # hashed once
        by_shard: dict[int, list] = {}
        for shard, item in zip(shards, items):
            by_shard.setdefault(shard, []).append(item)
        answers: dict[int, object] = {}

        async def ask(shard: int, part: list) -> None:
            sub = dataclasses.replace(request, **{field: tuple(part)})
            if self._elsewhere(ctx, shard):
                answers[shard] = error_response(ctx.api_key, ctx.version, sub, ErrorCode.NOT_COORDINATOR)
                return
            answers[shard] = await self.runners[shard].call(ctx.api_key, ctx.version, sub,
                                                            client_id=ctx.client_id,
                                                            barriers=ctx.barriers)

        async with trio.open_nursery() as nursery:
            for shard, part in by_shard.items():
                nursery.start_soon(ask, shard, part)
        queues = {shard: list(getattr(answer, result_field)) for shard, answer in answers.items()}
        for queue in queues.values():
            queue.reverse()                       # pop() from the end takes them in order
        merged = [queues[shard].pop() for shard in shards]
        if order is not None:
            merged = [merged[i] for i in order(items, shards)]
        template = next(iter(answers.values()), None)
        if template is None:
            return RESPONSES[ctx.api_key].cls()
        return dataclasses.replace(template, **{result_field: tuple(merged)})

    async def describe_groups(self, ctx, request):
        return await self._split(ctx, request, "groups", _itself, "groups", _DESCRIPTION_ORDER)

    async def delete_groups(self, ctx, request):
        return await self._split(ctx, request, "groups_names", _itself, "results", _kafka_deletion_order)

    async def consumer_group_describe(self, ctx, request):
        return await self._split(ctx, request, "group_ids", _itself, "groups", _CONSUMER_DESCRIPTION_ORDER)

    share_group_describe = streams_group_describe = consumer_group_describe

    async def list_groups(self, ctx, request):
        answers = [None] * len(self.runners)

        async def ask(i: int) -> None:
            answers[i] = await self.runners[i].call(ctx.api_key, ctx.version, request,
                                                    barriers=ctx.barriers)

        async with trio.open_nursery() as nursery:
            for i in range(len(self.runners)):
                if not self._elsewhere(ctx, i):       # a node lists the groups it coordinates
                    nursery.start_soon(ask, i)
        # As Kafka's GroupCoordinatorService: a shard that is not the coordinator (any more)
        # lists no groups; any other shard error (e.g. still loading) fails the whole answer.
        answers = [a for a in answers if a is not None and a.error_code != ErrorCode.NOT_COORDINATOR]
        error = next((a.error_code for a in answers if a.error_code != ErrorCode.NONE), ErrorCode.NONE)
        return RESPONSES[ApiKey.LIST_GROUPS].cls(
            error_code=error, groups=tuple(g for a in answers for g in a.groups))



#: the first TxnOffsetCommit version of transaction version 2
TV2_TXN_OFFSET_COMMIT = 5


def _unchanged(answer):
    return answer


def verification_error(error: ErrorCode, version: int) -> ErrorCode:
    """What a TxnOffsetCommit answers when its transaction's verification fails: a fenced producer
    is INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is INVALID_TXN_STATE before v4 (clients
    older than KIP-890 know only that), then the group coordinator's own error translation."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and version <= 3:
        return ErrorCode.INVALID_TXN_STATE
    return _COORDINATOR_ERRORS.get(error, error)


#: Kafka's group coordinator answers these errors of the layers below it as others
_COORDINATOR_ERRORS = {
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
}


def _kafka_order(first=lambda item: False):
    """Kafka's order of the answers to a multi-group request: the items ``first`` picks (answered
    before any shard is asked), then each shard's items in :func:`shard_order`."""
    def order(items, shards) -> list[int]:
        lead = [i for i, item in enumerate(items) if first(item)]
        rest = [i for i, item in enumerate(items) if not first(item)]
        return lead + [i for shard in shard_order([shards[i] for i in rest])
                       for i in rest if shards[i] == shard]
    return order


def _kafka_deletion_order(groups, shards) -> list[int]:
    """DeleteGroups as Kafka answers it: each group once, shard by shard in
    :func:`shard_order`, a shard's groups in :func:`hash_set_order`."""
    first = {}
    for i, group in enumerate(groups):
        first.setdefault(group, i)
    return [first[group] for shard in shard_order(list(shards))
            for group in hash_set_order([g for g, s in zip(groups, shards) if s == shard])]


def _itself(group_id: str) -> str:
    return group_id


_DESCRIPTION_ORDER = _kafka_order()
#: ConsumerGroupDescribe answers an empty group id before asking any shard
_CONSUMER_DESCRIPTION_ORDER = _kafka_order(first=lambda group: group == "")


def _after_errors(version: int, errors: list, answer):
    """Kafka's OffsetCommitResponse.Builder: the API layer's errors first, one entry per topic
    (by id from v10, else by name), then the coordinator's topics, each joining the entry of
    the same topic if there is one."""
    key = (lambda t: t.topic_id) if version >= TOPIC_IDS_SINCE else (lambda t: t.name)
    part_cls = _COMMIT_TOPIC.OffsetCommitResponsePartition
    merged: dict = {}
    for t, failed in errors:
        merged.setdefault(key(t), (t, []))[1].extend(
            part_cls(partition_index=p, error_code=error) for p, error in failed)
    for t in answer.topics:
        merged.setdefault(key(t), (t, []))[1].extend(t.partitions)
    return dataclasses.replace(answer, topics=tuple(
        _COMMIT_TOPIC(name=t.name, topic_id=t.topic_id, partitions=tuple(parts)) for t, parts in merged.values()))


def _fetched_by_id(image: MetadataImage, group, sent, missing: list):
    """One group of a v10+ OffsetFetch answer with its topics' ids: those of the topics asked,
    or (all of the group's offsets) those the topics have now, leaving out topics that no
    longer exist; then the unknown ids asked, UNKNOWN_TOPIC_ID. A failed group stays as it is."""
    if group.error_code != ErrorCode.NONE:
        return group
    if sent.topics is None:
        topics = tuple(dataclasses.replace(t, topic_id=image.topics[t.name].topic_id)
                       for t in group.topics if t.name in image.topics)
    else:
        topics = tuple(dataclasses.replace(t, topic_id=s.topic_id) for t, s in zip(group.topics, sent.topics))
    part_cls = _FETCHED_TOPIC.OffsetFetchResponsePartitions
    return dataclasses.replace(group, topics=topics + tuple(
        _FETCHED_TOPIC(topic_id=t.topic_id, partitions=tuple(
            part_cls(partition_index=p, committed_offset=-1, error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            for p in t.partition_indexes)) for t in missing))


def _with_unknown_partitions(api_key: int, topics, answer):
    """Kafka's OffsetDeleteResponse and TxnOffsetCommitResponse builders: the partitions that do
    not exist first, UNKNOWN_TOPIC_OR_PARTITION in request order, one entry per topic; then the
    coordinator's answer, each topic joining the entry of the same name if there is one. A
    whole-request error of the coordinator replaces them all."""
    if getattr(answer, "error_code", ErrorCode.NONE) != ErrorCode.NONE:
        return answer
    topic_cls, part_cls = _RESULT_CLASSES[api_key]
    answered = {(t.name, p.partition_index) for t in answer.topics for p in t.partitions}
    merged: dict[str, list] = {}
    for t in topics:
        for p in t.partitions:
            if (t.name, p.partition_index) not in answered:
                merged.setdefault(t.name, []).append(
                    part_cls(partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    for t in answer.topics:
        merged.setdefault(t.name, []).extend(t.partitions)
    return dataclasses.replace(answer, topics=tuple(
        topic_cls(name=name, partitions=tuple(parts)) for name, parts in merged.items()))
