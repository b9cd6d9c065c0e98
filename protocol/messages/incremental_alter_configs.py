"""IncrementalAlterConfigs (API key 44): set, delete, append to or subtract from single configs."""

from ..schema import F, Message

REQUEST = Message("IncrementalAlterConfigsRequest", 44, "request", "0-1", "1+", [
    F("resources", "[]AlterConfigsResource", fields=[
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("configs", "[]AlterableConfig", fields=[
            F("name", "string"),
            F("config_operation", "int8"),
            F("value", "string", nullable="0+"),
        ]),
    ]),
    F("validate_only", "bool"),
])

RESPONSE = Message("IncrementalAlterConfigsResponse", 44, "response", "0-1", "1+", [
    F("throttle_time_ms", "int32"),
    F("responses", "[]AlterConfigsResourceResponse", fields=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("resource_type", "int8"),
        F("resource_name", "string"),
    ]),
])

