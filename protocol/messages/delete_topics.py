"""DeleteTopics (API key 20): delete topics by name (or, from v6, by topic id)."""

from ..schema import F, Message

REQUEST = Message("DeleteTopicsRequest", 20, "request", "1-6", "4+", [
    F("topics", "[]DeleteTopicState", "6+", fields=[
        F("name", "string", "6+", nullable="6+", default=None),
        F("topic_id", "uuid", "6+"),
    ]),
    F("topic_names", "[]string", "0-5", ignorable=True),
    F("timeout_ms", "int32"),
])

RESPONSE = Message("DeleteTopicsResponse", 20, "response", "1-6", "4+", [
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("responses", "[]DeletableTopicResult", fields=[
        F("name", "string", nullable="6+"),
        F("topic_id", "uuid", "6+", ignorable=True),
        F("error_code", "int16"),
        F("error_message", "string", "5+", nullable="5+", default=None, ignorable=True),
    ]),
])
