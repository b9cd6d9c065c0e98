"""DeleteGroups (API key 42): delete empty groups together with their committed offsets."""

from ..schema import F, Message

REQUEST = Message("DeleteGroupsRequest", 42, "request", "0-2", "2+", [
    F("groups_names", "[]string"),
])

RESPONSE = Message("DeleteGroupsResponse", 42, "response", "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", "[]DeletableGroupResult", fields=[
        F("group_id", "string"),
        F("error_code", "int16"),
    ]),
])
