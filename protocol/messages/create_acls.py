"""CreateAcls (API key 30): add ACL bindings."""

from ..schema import F, Message

REQUEST = Message("CreateAclsRequest", 30, "request", "1-3", "2+", [
    F("creations", "[]AclCreation", fields=[
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("resource_pattern_type", "int8", "1+", default=3),
        F("principal", "string"),
        F("host", "string"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ]),
])

RESPONSE = Message("CreateAclsResponse", 30, "response", "1-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("results", "[]AclCreationResult", fields=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
    ]),
])
