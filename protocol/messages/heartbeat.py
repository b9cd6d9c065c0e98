"""Heartbeat (API key 12): a member proves it is alive and learns of rebalances."""

from ..schema import F, Message

REQUEST = Message("HeartbeatRequest", 12, "request", "0-4", "4+", [
    F("group_id", "string"),
    F("generation_id", "int32"),
    F("member_id", "string"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
])

RESPONSE = Message("HeartbeatResponse", 12, "response", "0-4", "4+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16"),
])
