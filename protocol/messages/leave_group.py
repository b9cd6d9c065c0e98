"""LeaveGroup (API key 13): members (or an admin, for static members) leave a group at once."""

from ..schema import F, Message

REQUEST = Message("LeaveGroupRequest", 13, "request", "0-5", "4+", [
    F("group_id", "string"),
    F("member_id", "string", "0-2"),
    F("members", "[]MemberIdentity", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("reason", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])

RESPONSE = Message("LeaveGroupResponse", 13, "response", "0-5", "4+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16"),
    F("members", "[]MemberResponse", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("error_code", "int16", "3+"),
    ]),
])
