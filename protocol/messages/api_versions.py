"""ApiVersions (API key 18): a client learns which API versions and features the broker supports."""

from ..schema import F, Message

REQUEST = Message("ApiVersionsRequest", 18, "request", "0-4", "3+", [
    F("client_software_name", "string", "3+", ignorable=True),
    F("client_software_version", "string", "3+", ignorable=True),
])

RESPONSE = Message("ApiVersionsResponse", 18, "response", "0-4", "3+", [
    F("error_code", "int16"),
    F("api_keys", "[]ApiVersion", fields=[
        F("api_key", "int16"),
        F("min_version", "int16"),
        F("max_version", "int16"),
    ]),
    F("throttle_time_ms", "int32", "1+", ignorable=True),
    F("supported_features", "[]SupportedFeatureKey", "3+", tag=0, tagged="3+", ignorable=True,
      fields=[
          F("name", "string", "3+"),
          F("min_version", "int16", "3+"),
          F("max_version", "int16", "3+"),
      ]),
    F("finalized_features_epoch", "int64", "3+", default=-1, tag=1, tagged="3+", ignorable=True),
    F("finalized_features", "[]FinalizedFeatureKey", "3+", tag=2, tagged="3+", ignorable=True,
      fields=[
          F("name", "string", "3+"),
          F("max_version_level", "int16", "3+"),
          F("min_version_level", "int16", "3+"),
      ]),
    F("zk_migration_ready", "bool", "3+", default=False, tag=3, tagged="3+", ignorable=True),
])
