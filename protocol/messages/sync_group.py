"""SyncGroup (API key 14): the leader hands in the assignment; every member receives its share."""

from ..schema import F, Message

REQUEST = Message("SyncGroupRequest", 14, "request", "0-5", "4+", [
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("assignments", "[]SyncGroupRequestAssignment", fields=[
        F("member_id", "string"),
        F("assignment", "bytes"),
    ]),
])

RESPONSE = Message("SyncGroupResponse", 14, "response", "0-5", "4+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16"),
    F("protocol_type", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("protocol_name", "string", "5+", nullable="5+", default=None, ignorable=True),
    F("assignment", "bytes"),
])
