"""DescribeGroups (API key 15): report the state, protocol and members of classic groups."""

from ..schema import F, Message

REQUEST = Message("DescribeGroupsRequest", 15, "request", "0-6", "5+", [
    F("groups", "[]string"),
    F("include_authorized_operations", "bool", "3+"),
])

RESPONSE = Message("DescribeGroupsResponse", 15, "response", "0-6", "5+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("groups", "[]DescribedGroup", fields=[
        F("error_code", "int16"),
        F("error_message", "string", "6+", nullable="6+", default=None),
        F("group_id", "string"),
        F("group_state", "string"),
        F("protocol_type", "string"),
        F("protocol_data", "string"),
        F("members", "[]DescribedGroupMember", fields=[
            F("member_id", "string"),
            F("group_instance_id", "string", "4+", nullable="4+", default=None, ignorable=True),
            F("client_id", "string"),
            F("client_host", "string"),
            F("member_metadata", "bytes"),
            F("member_assignment", "bytes"),
        ]),
        F("authorized_operations", "int32", "3+", default=-2147483648),
    ]),
])
