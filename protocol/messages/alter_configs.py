"""AlterConfigs (API key 33): replace the whole set of dynamic configs of a resource."""

from ..schema import F, Message

REQUEST = Message("AlterConfigsRequest", 33, "request", "0-2", "2+", [
    F("resources", "[]AlterConfigsResource", fields=[
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", "[]AlterableConfig", fields=[
            F("name", "string"),
            F("value", "string", nullable="0+"),
        ]),
    ]),
    F("validate_only", "bool"),
])

RESPONSE = Message("AlterConfigsResponse", 33, "response", "0-2", "2+", [
    F("throttle_time_ms", "int32"),
    F("responses", "[]AlterConfigsResourceResponse", fields=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    ]),
])

