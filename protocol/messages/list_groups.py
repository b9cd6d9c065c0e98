"""ListGroups (API key 16): list the groups this broker coordinates, optionally filtered."""

from ..schema import F, Message

REQUEST = Message("ListGroupsRequest", 16, "request", "0-5", "3+", [
    F("states_filter", "[]string", "4+"),
    F("types_filter", "[]string", "5+"),
])

RESPONSE = Message("ListGroupsResponse", 16, "response", "0-5", "3+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("error_code", "int16"),
    F("groups", "[]ListedGroup", fields=[
        F("group_id", "string"),
        F("protocol_type", "string"),
        F("group_state", "string", "4+", ignorable=True),
        F("group_type", "string", "5+", ignorable=True),
    ]),
])
