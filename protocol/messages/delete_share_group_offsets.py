"""DeleteShareGroupOffsets (API key 92): forget an empty share group's state for whole topics
(kafka-share-groups --delete-offsets)."""

from ..schema import F, Message

REQUEST = Message("DeleteShareGroupOffsetsRequest", 92, "request", "0", "0+", [
    F("group_id", "string"),
    F("topics", "[]DeleteShareGroupOffsetsRequestTopic", fields=[
        F("topic_name", "string"),
    ]),
])

RESPONSE = Message("DeleteShareGroupOffsetsResponse", 92, "response", "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+", default=None),
    F("responses", "[]DeleteShareGroupOffsetsResponseTopic", fields=[
        F("topic_name", "string"),
        F("topic_id", "uuid"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+", default=None),
    ]),
])
