"""FindCoordinator (API key 10): locate the broker coordinating a group or transaction."""

from ..schema import F, Message

REQUEST = Message("FindCoordinatorRequest", 10, "request", "0-6", "3+", [
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+", default=0),
    F("coordinator_keys", "[]string", "4+"),
])

RESPONSE = Message("FindCoordinatorResponse", 10, "response", "0-6", "3+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3", ignorable=True),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", "[]Coordinator", "4+", fields=[
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+", ignorable=True),
    ]),
])
