"""DescribeUserScramCredentials (API key 50): the SCRAM mechanisms and iterations of users."""

from ..schema import F, Message

REQUEST = Message("DescribeUserScramCredentialsRequest", 50, "request", "0", "0+", [
    F("users", "[]UserName", nullable="0+", fields=[
        F("name", "string"),
    ]),
])

RESPONSE = Message("DescribeUserScramCredentialsResponse", 50, "response", "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("results", "[]DescribeUserScramCredentialsResult", fields=[
        F("user", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
        F("credential_infos", "[]CredentialInfo", fields=[
            F("mechanism", "int8"),
            F("iterations", "int32"),
        ]),
    ]),
])
