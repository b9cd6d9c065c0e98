"""DescribeCluster, DescribeLogDirs and ElectLeaders, answered as a Kafka 4 cluster answers them.

The cluster is this process's nodes: the live ones, the controller clients are told of (Kafka
names a random live broker in KRaft mode; we name the lowest), each partition's leader.
With no authorizer, Kafka grants every operation a resource supports.
"""

from __future__ import annotations

import logging
import os
from typing import Callable

from protocol.api_keys import ApiKey
from protocol.error_messages import default_message
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from topic_log import TopicStore, UnknownTopicOrPartition

from broker.cluster.topology import NO_LEADER, Topology
from broker.config import BrokerConfig
from broker.data.errors import Refused, error_message

log = logging.getLogger("groupbroker.data")
E = ErrorCode
DescribeCluster = RESPONSES[ApiKey.DESCRIBE_CLUSTER].cls
DescribeLogDirs = RESPONSES[ApiKey.DESCRIBE_LOG_DIRS].cls
ElectLeaders = RESPONSES[ApiKey.ELECT_LEADERS].cls
#: AclEntry.supportedOperations(CLUSTER): CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
#: DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE (AclOperation codes), as a bit field
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
#: EndpointType ids: the request asks which kind of endpoint it means to talk to
BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
#: ElectionType ids
PREFERRED, UNCLEAN = 0, 1


class ClusterAdmin:
    def __init__(self, store: TopicStore, config: BrokerConfig, topology: Topology):
        self.store, self.config, self.topology = store, config, topology
        #: ``elect(topic, partition, node)`` makes ``node`` the partition's leader (set by the
        #: broker: a leader change is followed by the running parts)
        self.elect: Callable[[str, int, int], object] | None = None

    # --- DescribeCluster (KafkaApis.handleDescribeCluster, AuthHelper) ------------------------
    async def describe_cluster(self, ctx, req):
        asked = req.endpoint_type
        if asked not in (BROKER_ENDPOINT, CONTROLLER_ENDPOINT):
            return DescribeCluster(error_code=E.INVALID_REQUEST if ctx.version == 0 else E.UNSUPPORTED_ENDPOINT_TYPE,
                                   error_message=f"Unsupported endpoint type {asked}")
        if asked == CONTROLLER_ENDPOINT:
            return DescribeCluster(error_code=E.INVALID_REQUEST if ctx.version == 0 else E.MISMATCHED_ENDPOINT_TYPE,
                                   error_message="The request was sent to an endpoint of type BROKER, "
                                                 "but we wanted an endpoint of type CONTROLLER")
        brokers = tuple(DescribeCluster.DescribeClusterBroker(broker_id=n.node_id, host=n.host, port=n.port,
                                                              rack=n.rack, is_fenced=False)
                        for n in self.topology.live_nodes(ctx.listener))
        operations = {"cluster_authorized_operations": CLUSTER_OPERATIONS} \
            if req.include_cluster_authorized_operations else {}      # else the schema's "not asked"
        return DescribeCluster(error_code=E.NONE, endpoint_type=BROKER_ENDPOINT,
                               cluster_id=self.config.cluster_id, controller_id=self.topology.controller(),
                               brokers=brokers, **operations)

    # --- DescribeLogDirs (KafkaApis.handleDescribeLogDirsRequest, ReplicaManager) ---------------
    async def describe_log_dirs(self, ctx, req):
        """The one log dir (the data dir): the partitions asked for (null: all) that the node
        asked holds a replica of, with their sizes, and (v4+) the size and free space of its
        file system; topics with none of those partitions are left out. It is never cordoned
        (v5, KIP-1066): Kafka answers false for a directory not listed in cordoned.log.dirs."""
        Result = DescribeLogDirs.DescribeLogDirsResult
        directory = os.path.abspath(self.config.data_dir)
        try:
            disk = os.statvfs(directory)
        except OSError as e:
            log.warning("DescribeLogDirs: cannot describe %s: %s", directory, e)
            return DescribeLogDirs(error_code=E.NONE, results=(
                Result(error_code=E.KAFKA_STORAGE_ERROR, log_dir=directory),))
        wanted = None if req.topics is None else {(t.topic, p) for t in req.topics for p in t.partitions}
        Topic = Result.DescribeLogDirsTopic
        topics = []
        for topic in self.store.topics():
            parts = tuple(Topic.DescribeLogDirsPartition(partition_index=p, partition_size=plog.size_bytes,
                                                         offset_lag=0, is_future_key=False)
                          for p, plog in enumerate(topic.partitions)
                          if (wanted is None or (topic.name, p) in wanted) and self._holds(ctx, topic.name, p))
            if parts:
                topics.append(Topic(name=topic.name, partitions=parts))
        return DescribeLogDirs(error_code=E.NONE, results=(Result(
            error_code=E.NONE, log_dir=directory, topics=tuple(topics),
            total_bytes=disk.f_blocks * disk.f_frsize, usable_bytes=disk.f_bavail * disk.f_frsize,
            is_cordoned=False),))

    def _holds(self, ctx, topic: str, partition: int) -> bool:
        return self.topology.single or ctx.node_id in self.topology.of(topic, partition).replicas

    # --- ElectLeaders (ControllerApis, ReplicationControlManager.electLeaders) ----------------
    async def elect_leaders(self, ctx, req):
        """Named partitions each get a result; for null (all partitions) those that already
        have the desired leader (ELECTION_NOT_NEEDED) are left out, as Kafka's controller does."""
        Result = ElectLeaders.ReplicaElectionResult
        if req.topic_partitions is not None and not req.topic_partitions:
            return ElectLeaders(error_code=E.NONE, replica_election_results=())
        if req.election_type not in (PREFERRED, UNCLEAN):
            raise Refused(E.INVALID_REQUEST, f"Unknown election type {req.election_type}")
        kind = req.election_type
        if req.topic_partitions is None:
            return ElectLeaders(error_code=E.NONE, replica_election_results=tuple(
                Result(topic=t.name, partition_result=tuple(
                    r for r in (self._elect(t.name, p, kind) for p in range(len(t.partitions)))
                    if r.error_code != E.ELECTION_NOT_NEEDED))
                for t in self.store.topics()))
        return ElectLeaders(error_code=E.NONE, replica_election_results=tuple(
            Result(topic=t.topic, partition_result=tuple(self._elect(t.topic, p, kind) for p in t.partitions))
            for t in req.topic_partitions))

    def _elect(self, topic: str, partition: int, kind: int):
        """ReplicationControlManager.electLeader for one partition: a preferred election makes
        the first replica leader again if it runs; an unclean one is needed only by a partition
        without a leader, which here has no running replica either."""
        try:
            count = len(self.store.topic(topic).partitions)
        except UnknownTopicOrPartition:
            return _partition_result(partition, E.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}")
        if not 0 <= partition < count:
            return _partition_result(partition, E.UNKNOWN_TOPIC_OR_PARTITION,
                                     f"No such partition as {topic}-{partition}")
        lead = self.topology.of(topic, partition)
        preferred = lead.replicas[0]
        if (kind == PREFERRED and lead.leader == preferred) or (kind == UNCLEAN and lead.leader != NO_LEADER):
            return _partition_result(partition, E.ELECTION_NOT_NEEDED, default_message(E.ELECTION_NOT_NEEDED))
        if kind == UNCLEAN or preferred not in self.topology.live:
            error = E.PREFERRED_LEADER_NOT_AVAILABLE if kind == PREFERRED else E.ELIGIBLE_LEADERS_NOT_AVAILABLE
            return _partition_result(partition, error, default_message(error))
        self.elect(topic, partition, preferred)
        log.info("ElectLeaders: node %d, the preferred replica, leads %s-%d again", preferred, topic, partition)
        return _partition_result(partition, E.NONE, None)


def _partition_result(partition: int, error: ErrorCode, message: str | None):
    """One partition's election result; the message (quoting a client's topic name) is cut."""
    return ElectLeaders.ReplicaElectionResult.PartitionResult(
        partition_id=partition, error_code=error,
        error_message=None if message is None else error_message(Refused(error, message)))
