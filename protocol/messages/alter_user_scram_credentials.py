"""AlterUserScramCredentials (API key 51): add, change or remove users' SCRAM credentials
(the client sends a salt and salted password, never the password)."""

from ..schema import F, Message

REQUEST = Message("AlterUserScramCredentialsRequest", 51, "request", "0", "0+", [
    F("deletions", "[]ScramCredentialDeletion", fields=[
        F("name", "string"),
        F("mechanism", "int8"),
    ]),
    F("upsertions", "[]ScramCredentialUpsertion", fields=[
        F("name", "string"),
        F("mechanism", "int8"),
        F("iterations", "int32"),
        F("salt", "bytes"),
        F("salted_password", "bytes"),
    ]),
])

RESPONSE = Message("AlterUserScramCredentialsResponse", 51, "response", "0", "0+", [
    F("throttle_time_ms", "int32"),
    F("results", "[]AlterUserScramCredentialsResult", fields=[
        F("user", "string"),
        F("error_code", "int16"),
        F("error_message", "string", nullable="0+"),
    ]),
])
