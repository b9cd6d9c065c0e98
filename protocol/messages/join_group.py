"""JoinGroup (API key 11): enter a group's rebalance and receive the generation's members."""

from ..schema import F, Message

REQUEST = Message("JoinGroupRequest", 11, "request", "0-9", "6+", [
    F("group_id", "string"),
    F("session_timeout_ms", "int32"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1, ignorable=True),
    F("member_id", "string"),
    F("group_instance_id", "string", "5+", nullable="5+", default=None),
    F("protocol_type", "string"),
    F("protocols", "[]JoinGroupRequestProtocol", fields=[
        F("name", "string"),
        F("metadata", "bytes"),
    ]),
    F("reason", "string", "8+", nullable="8+", default=None, ignorable=True),
])

RESPONSE = Message("JoinGroupResponse", 11, "response", "0-9", "6+", [
    F("throttle_time_ms", "int32", "2+", ignorable=True),
    F("error_code", "int16"),
    F("generation_id", "int32", default=-1),
    F("protocol_type", "string", "7+", nullable="7+", default=None, ignorable=True),
    F("protocol_name", "string", nullable="7+"),
    F("leader", "string"),
    F("skip_assignment", "bool", "9+", default=False),
    F("member_id", "string"),
    F("members", "[]JoinGroupResponseMember", fields=[
        F("member_id", "string"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None, ignorable=True),
        F("metadata", "bytes"),
    ]),
])
