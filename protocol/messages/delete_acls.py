"""DeleteAcls (API key 31): remove the ACLs matching each filter."""

from ..schema import F, Message

REQUEST = Message("DeleteAclsRequest", 31, "request", "1-3", "2+", [
    F("filters", "[]DeleteAclsFilter", fields=[
        F("resource_type_filter", "int8"),
        F("resource_name_filter", "string", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", nullable="0+"),
        F("host_filter", "string", nullable="0+"),
        F("operation", "int8"),
        F("permission_type", "int8"),
    ]),
])

RESPONSE = Message("DeleteAclsResponse", 31, "response", "1-3", "2+", [
    F("throttle_time_ms", "int32"),
    F("filter_results", "[]DeleteAclsFilterResult", fields=[
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("matching_acls", "[]DeleteAclsMatchingAcl", fields=[
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("pattern_type", "int8", "1+", default=3),
            F("principal", "string"),
            F("host", "string"),
            F("operation", "int8"),
            F("permission_type", "int8"),
        ]),
    ]),
])
