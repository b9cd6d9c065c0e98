"""The data plane's APIs, one declaration each: :class:`broker.data.plane.DataPlane` (and its
topic admin, cluster admin and config parts) answers them."""

from __future__ import annotations

from coordinator.transactions import marker_answers
from protocol import error_answers
from protocol.api_keys import ApiKey

from security.acls import Operation
from security.authorization import Authorization, cluster, configs, topics_of

from broker.api_spec import ApiSpec, Runs


def _data(key: ApiKey, handler: str, failed, authorize, **more) -> ApiSpec:
    return ApiSpec(key, Runs.DATA_PLANE, handler, failed, authorize, **more)


DATA_APIS = (
    _data(ApiKey.METADATA, "metadata", error_answers.metadata, Authorization.metadata),
    # Kafka 4 advertises Produce from v0 though it serves v3 and up (KAFKA-18659: librdkafka before
    # 2.10 will not produce to a broker whose Produce starts at v3); a v0-2 request is refused like
    # any unknown version: the connection is closed.
    _data(ApiKey.PRODUCE, "produce", error_answers.produce, Authorization.produce, injectable=True,
          advertised_min=0),
    _data(ApiKey.FETCH, "fetch", error_answers.fetch, Authorization.fetch, injectable=True),
    _data(ApiKey.LIST_OFFSETS, "list_offsets", error_answers.list_offsets,
          topics_of("topics", "name", Operation.DESCRIBE, "topics"), injectable=True),
    _data(ApiKey.CREATE_TOPICS, "create_topics", error_answers.create_topics, Authorization.create_topics),
    _data(ApiKey.DELETE_TOPICS, "delete_topics", error_answers.delete_topics, Authorization.delete_topics),
    _data(ApiKey.DESCRIBE_PRODUCERS, "describe_producers", error_answers.describe_producers,
          topics_of("topics", "name", Operation.READ, "topics")),
    _data(ApiKey.OFFSET_FOR_LEADER_EPOCH, "offset_for_leader_epoch", error_answers.offset_for_leader_epoch,
          topics_of("topics", "topic", Operation.DESCRIBE, "topics")),
    # topic and cluster admin (topic_admin.py, cluster_admin.py)
    _data(ApiKey.CREATE_PARTITIONS, "topic_admin.create_partitions", error_answers.create_partitions,
          topics_of("topics", "name", Operation.ALTER, "results")),
    _data(ApiKey.DELETE_RECORDS, "topic_admin.delete_records", error_answers.delete_records,
          topics_of("topics", "name", Operation.DELETE, "topics")),
    _data(ApiKey.DESCRIBE_CLUSTER, "cluster_admin.describe_cluster",
          error_answers.top_level(ApiKey.DESCRIBE_CLUSTER, message=True), Authorization.describe_cluster),
    _data(ApiKey.DESCRIBE_LOG_DIRS, "cluster_admin.describe_log_dirs", error_answers.describe_log_dirs,
          cluster(Operation.DESCRIBE)),
    _data(ApiKey.ELECT_LEADERS, "cluster_admin.elect_leaders", error_answers.elect_leaders,
          cluster(Operation.ALTER)),
    # share groups' deliveries (share_fetch.py)
    _data(ApiKey.SHARE_FETCH, "share.share_fetch", error_answers.top_level(ApiKey.SHARE_FETCH),
          Authorization.share_fetch, feature="share.version", injectable=True),
    _data(ApiKey.SHARE_ACKNOWLEDGE, "share.share_acknowledge", error_answers.top_level(ApiKey.SHARE_ACKNOWLEDGE),
          Authorization.share_fetch, feature="share.version", injectable=True),
    _data(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, "share.describe_offsets", error_answers.describe_share_group_offsets,
          Authorization.describe_share_group_offsets, feature="share.version"),
    _data(ApiKey.ALTER_SHARE_GROUP_OFFSETS, "share.alter_offsets",
          error_answers.with_default_message(ApiKey.ALTER_SHARE_GROUP_OFFSETS), Authorization.share_fetch,
          feature="share.version"),
    _data(ApiKey.DELETE_SHARE_GROUP_OFFSETS, "share.delete_offsets",
          error_answers.with_default_message(ApiKey.DELETE_SHARE_GROUP_OFFSETS), Authorization.delete_share_offsets,
          feature="share.version"),
    # transaction markers (txn_markers.py)
    _data(ApiKey.WRITE_TXN_MARKERS, "write_txn_markers", marker_answers.failed,
          Authorization.write_txn_markers),
    # topic and broker configs (config_apis.py)
    _data(ApiKey.DESCRIBE_CONFIGS, "config_apis.describe_configs", error_answers.describe_configs,
          configs(Operation.DESCRIBE_CONFIGS)),
    _data(ApiKey.ALTER_CONFIGS, "config_apis.alter_configs", error_answers.altered_configs(ApiKey.ALTER_CONFIGS),
          configs(Operation.ALTER_CONFIGS)),
    _data(ApiKey.INCREMENTAL_ALTER_CONFIGS, "config_apis.incremental_alter_configs",
          error_answers.altered_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS), configs(Operation.ALTER_CONFIGS)),
)
