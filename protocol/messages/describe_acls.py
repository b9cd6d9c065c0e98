"""DescribeAcls (API key 29): the ACLs matching a filter."""

from ..schema import F, Message

REQUEST = Message("DescribeAclsRequest", 29, "request", "1-3", "2+", [
    F("resource_type_filter", "int8"),
    F("resource_name_filter", "string", nullable="0+"),
    F("pattern_type_filter", "int8", "1+", default=3),
    F("principal_filter", "string", nullable="0+"),
    F("host_filter", "string", nullable="0+"),
    F("operation", "int8"),
    F("permission_type", "int8"),
])

RESPONSE = Message("DescribeAclsResponse", 29, "response", "1-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("resources", "[]DescribeAclsResource", fields=[
        F("resource_type", "int8"),
        F("resource_name", "string"),
        F("pattern_type", "int8", "1+", default=3),
        F("acls", "[]AclDescription", fields=[
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ]),
])
