"""DescribeCluster (API key 60): the brokers, the controller and the cluster id."""

from ..schema import F, Message

REQUEST = Message("DescribeClusterRequest", 60, "request", "0-2", "0+", [
    F("include_cluster_authorized_operations", "bool"),
    F("endpoint_type", "int8", "1+", default=1),
    F("include_fenced_brokers", "bool", "2+"),
])

RESPONSE = Message("DescribeClusterResponse", 60, "response", "0-2", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string"),
    F("controller_id", "int32", default=-1),
    F("brokers", "[]DescribeClusterBroker", fields=[
        F("broker_id", "int32"),
        F("host", "string"),
        F("port", "int32"),
        F("rack", "string", nullable="0+", default=None),
        F("is_fenced", "bool", "2+"),
    ]),
    F("cluster_authorized_operations", "int32", default=-2147483648),
])

