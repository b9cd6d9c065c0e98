"""One running broker: its parts, built and wired here before it serves (the composition root),
and their lifecycle.

Building binds every node's listeners (so the endpoints clients are told are known), then
makes the data plane, the coordinator shards, the group router, the transaction coordinator,
dispatch and the fault-injection control, each given the collaborators it uses. Building reads
no log: serving opens the shards' logs in worker threads while it already accepts (group
requests are answered COORDINATOR_LOAD_IN_PROGRESS meanwhile).

Serving runs two nurseries, as hypercorn shuts down: the shard tasks live in the outer one so
they outlive every connection; the nodes' accept loops and connections in the inner one.
``stop()`` closes the listeners and every connection waiting for its next request, gives
in-flight requests ``shutdown_grace_s`` to finish, then stops the shards and flushes and closes
the logs.
"""

from __future__ import annotations

import logging
import os
from functools import partial

import trio

from coordinator.routing import shard_for
from coordinator.shard import Shard
from offsets_log.errors import OffsetsLogError
from security.setup import ListenerSecurity, build_security

from broker.cluster.log_homes import log_home, open_log
from broker.cluster.moves import ClusterMoves
from broker.dispatch.api_versions import finalized_features
from broker.cluster.topology import GROUP_TOPIC, Topology
from broker.config import BrokerConfig
from broker.data.plane import DataPlane
from broker.data.streams_topics import StreamsTopics
from broker.dispatch.handlers import Handlers
from broker.dispatch.served import INJECTABLE_APIS
from broker.faults.control import BrokerControl
from broker.faults.rules import Faults
from broker.group_runtime.flusher import Flusher
from broker.group_runtime.router import GroupRouter
from broker.group_runtime.shard_runner import ShardRunner
from broker.server.connection import Connection
from broker.server.nodes import NodeListeners
from broker.txn_runtime.apis import TransactionApis
from broker.txn_runtime.service import TransactionService, group_partition

log = logging.getLogger("groupbroker.server")


class Broker:
    """``faults`` outlive a restart (the embedded broker keeps them); ``security``: each
    listener's TLS and SASL, built from ``config`` if not given (a bad setting raises
    SettingsError); ``sockets``: node -> listener -> sockets already listening (``groupbroker
    serve`` opens them early), else bound here."""

    def __init__(self, config: BrokerConfig, faults: Faults | None = None, security=None, sockets=None):
        self.config = config
        self.security: dict[str, ListenerSecurity] = security if security is not None else build_security(config)
        #: the nodes this process runs: node.id alone, or 0..N-1 for a cluster of N
        self.node_ids = [config.node_id] if config.nodes == 1 else list(range(config.nodes))
        self.nodes = NodeListeners(config, self.security, self.node_ids, sockets)
        self.topology = Topology(*self.nodes.endpoints())
        self.faults = faults or Faults(INJECTABLE_APIS)
        self.journal = None
        if config.journal_enable:
            from broker.journal.recorder import BrokerJournal     # imported only when it is on
            self.journal = BrokerJournal(config)
        self.flusher = Flusher(config.flush_policy)
        if config.log_flush_interval_ms is not None and not config.flush_policy.periodic:
            log.warning("log.flush.interval.ms=%d flushes nothing unless log.flush.scheduler.interval.ms "
                        "is set too (its default is never), as in Kafka", config.log_flush_interval_ms)
        data = DataPlane(config, self.topology, self._forget_topics,
                         group_marker=lambda shard, *marker: self.runners[shard].complete_transaction(*marker),
                         share_partitions=lambda group: self._runner(group).shard.share.initialized_partitions(group),
                         group_call=lambda key, version, request: self._runner(request.group_id).call(
                             key, version, request), journal=self.journal)
        self.faults.name_topics(data.topic_name)
        self.runners = [ShardRunner(Shard(i, config.coordinator, journal=self.journal is not None),
                                    partial(open_log, config.data_dir, self.topology, GROUP_TOPIC, i),
                                    journal=self.journal, flusher=self.flusher, metadata=data.store.metadata_image,
                                    group_configs=partial(data.config_apis.dynamic.scope, "groups"),
                                    share_state_init=data.share.initialize_state)
                        for i in range(config.coordinator.offsets_topic_num_partitions)]
        txn_partitions = config.transactions.transaction_state_log_num_partitions
        self.streams_topics = StreamsTopics(data.create_topics)
        groups = GroupRouter(self.runners, self.topology, data.has_partition, txn_partitions,
                             data.store.metadata_image, share_state_exists=data.share.manager.has_state,
                             streams_topics=self.streams_topics)
        self.transactions = TransactionService(
            config.data_dir, config.transactions, data.store.producer_ids.allocate,
            write_data_marker=data.write_marker, group_runner=self.runners.__getitem__,
            fsync_each=config.log_flush_interval_messages == 1, topology=self.topology,
            transaction_version=config.transaction_version)
        # the data plane and the group router check transactional writes with the transaction
        # coordinator, which writes its markers through the data plane: the one cycle, closed here
        data.verify_transaction = groups.verify_transaction = self.transactions.verify
        data.add_to_transaction = groups.add_to_transaction = self.transactions.add_for_produce
        self.handlers = Handlers(config, self.faults, data, groups, TransactionApis(
            self.transactions, data.store.producer_ids.allocate, data.has_partition,
            partial(group_partition, offsets_partitions=len(self.runners)), self.topology))
        moves = ClusterMoves(self.topology, data, self.runners, self.transactions, txn_partitions, self.nodes)
        data.cluster_admin.elect = moves.move_leader
        self.control = BrokerControl(self.faults, self.runners, self.transactions, self.topology, txn_partitions,
                                     moves, self.handlers.connection, data.share)
        self._stop = trio.Event()
        self._everything: trio.CancelScope | None = None
        self._crashed = False
        self.ready = trio.Event()          # set once every shard has loaded its log

    def _runner(self, group_id: str) -> ShardRunner:
        return self.runners[shard_for(group_id, len(self.runners))]

    @property
    def ports(self) -> dict[int, int]:
        """Each node's bound port (of its first listener)."""
        return self.nodes.ports

    @property
    def port(self) -> int:
        return self.nodes.ports[self.node_ids[0]]

    @property
    def listener_ports(self) -> dict[int, dict[str, int]]:
        """Each node's bound port per listener name."""
        return self.nodes.listener_ports

    def connections_open(self) -> int:
        """Connections accepted and not yet closed, on every node."""
        return self.nodes.connections_open()

    def stop(self, *, crash: bool = False) -> None:
        """Stop gracefully (answer what is in flight, flush the logs), or ``crash``: stop at
        once as a killed process would, answering nothing more and skipping the final fsync
        (what was acknowledged is on disk already)."""
        if crash and self._everything is not None:
            self._crashed = True
            self._everything.cancel()
        self._stop.set()

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until stopped."""
        cfg, data = self.config, self.handlers.data
        async with trio.open_nursery() as shards:
            self._everything = shards.cancel_scope
            self.streams_topics.nursery = shards
            shards.start_soon(self._load_shards, shards)
            shards.start_soon(self.flusher.run, self.runners)
            shards.start_soon(self.transactions.run)
            shards.start_soon(data.retention_loop)
            shards.start_soon(data.share.lock_loop)
            if cfg.log_cleaner_enable:
                shards.start_soon(data.cleaner_loop)
            if self.journal is not None:
                shards.start_soon(self.journal.run, data.store)
            try:
                async with trio.open_nursery() as listening:
                    await listening.start(self.nodes.serve, self._connection)
                    task_status.started(self)
                    await self._stop.wait()
                    self.nodes.close()
            finally:
                shards.cancel_scope.cancel()
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self._close_logs)

    def _connection(self, stream: trio.SocketStream, node_id: int, security: ListenerSecurity,
                    where: str) -> Connection:
        return Connection(stream, node_id, security, config=self.config, handlers=self.handlers,
                          faults=self.faults, where=where, stopping=lambda: self.nodes.stopping)

    async def _load_shards(self, nursery) -> None:
        """Shards load while we already accept (group APIs answer 14 meanwhile): one at a time
        in a worker thread, so that replaying logs never crowds out the event loop, and the
        smallest logs first, so that most groups are served soonest."""
        sizes = {runner: _log_bytes(log_home(self.config.data_dir, self.topology, GROUP_TOPIC, n))
                 for n, runner in enumerate(self.runners)}
        for runner in sorted(self.runners, key=sizes.__getitem__):
            # a shard whose log cannot be read answers NOT_COORDINATOR and retries by itself
            await nursery.start(runner.run)
        self.ready.set()
        log.info("all %d coordinator shards loaded; finalized features: %s", len(self.runners),
                 ", ".join(f"{name}={level}" for name, level in finalized_features(self.config.features)))

    def _forget_topics(self, topics: set[str]) -> None:
        for runner in self.runners:
            runner.forget_topics(topics)
        if self.journal is not None:
            self.journal.topics_deleted(topics)

    def _close_logs(self) -> None:
        for runner in self.runners:
            try:
                if not self._crashed and runner.loaded:
                    runner.log.sync()
            except OffsetsLogError as e:
                log.error("shard %d: final fsync failed: %s", runner.shard.shard_id, e)
            if runner.log is not None:
                runner.log.close()
        if self.journal is not None and not self._crashed:
            self.journal.close()              # before the topics close: it samples them last
        self.transactions.close()
        self.handlers.close()


def _log_bytes(directory: str) -> int:
    """The size of the files in ``directory`` (0 if there is none)."""
    try:
        with os.scandir(directory) as entries:
            return sum(entry.stat().st_size for entry in entries if entry.is_file())
    except OSError:
        return 0
