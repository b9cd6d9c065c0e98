"""The APIs a connection answers without the data plane or a coordinator: ApiVersions, SASL
after authentication, SCRAM users, ACLs. One declaration each, and :class:`ConnectionApis`,
which answers them."""

from __future__ import annotations

import trio

from protocol import error_answers
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES

from security import acl_apis, scram_apis
from security.acls import Authorizer, Operation
from security.authorization import cluster
from security.credentials import CredentialStore

from broker.api_spec import ApiSpec, Runs
from broker.dispatch.api_versions import api_versions_answer, finalized_features


def _own(key: ApiKey, handler: str, failed, authorize=None) -> ApiSpec:
    return ApiSpec(key, Runs.CONNECTION, handler, failed, authorize)


CONNECTION_APIS = (
    _own(ApiKey.API_VERSIONS, "api_versions", error_answers.top_level(ApiKey.API_VERSIONS)),
    # a SASL listener's session answers these before authentication (broker/server/sasl_gate.py)
    _own(ApiKey.SASL_HANDSHAKE, "sasl_handshake", error_answers.top_level(ApiKey.SASL_HANDSHAKE, mechanisms=())),
    _own(ApiKey.SASL_AUTHENTICATE, "sasl_authenticate",
         error_answers.top_level(ApiKey.SASL_AUTHENTICATE, message=True, auth_bytes=b"")),
    # SCRAM users (security/scram_apis.py)
    _own(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, "describe_scram", error_answers.describe_scram_credentials,
         cluster(Operation.DESCRIBE)),
    _own(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, "alter_scram", error_answers.alter_scram_credentials,
         cluster(Operation.ALTER)),
    # ACLs (security/acl_apis.py checks them itself, as Kafka's AclApis does)
    _own(ApiKey.CREATE_ACLS, "create_acls", error_answers.create_acls),
    _own(ApiKey.DESCRIBE_ACLS, "describe_acls",
         error_answers.top_level(ApiKey.DESCRIBE_ACLS, message=True, resources=())),
    _own(ApiKey.DELETE_ACLS, "delete_acls", error_answers.delete_acls),
)


class ConnectionApis:
    """``served``: the declarations of the APIs ApiVersions advertises; ``authorizer`` is None
    when ACLs are not enforced."""

    def __init__(self, served, credentials: CredentialStore, authorizer: Authorizer | None,
                 features: dict[str, int] | None = None):
        self.served = sorted(served, key=lambda spec: spec.key)
        self.finalized = finalized_features(features or {})
        self.credentials, self.authorizer = credentials, authorizer

    async def api_versions(self, ctx, body):
        return api_versions_answer(ctx.version, body, self.served, self.finalized)

    async def sasl_handshake(self, ctx, body):
        """On a connection already authenticated, or a listener without SASL (a SASL listener's
        session answers the exchange itself): KafkaApis' ILLEGAL_SASL_STATE."""
        return RESPONSES[ApiKey.SASL_HANDSHAKE].cls(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())

    async def sasl_authenticate(self, ctx, body):
        return RESPONSES[ApiKey.SASL_AUTHENTICATE].cls(
            error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"",
            error_message="SaslAuthenticate request received after successful authentication")

    async def describe_scram(self, ctx, body):
        return scram_apis.describe(self.credentials, body)

    async def alter_scram(self, ctx, body):
        """The credentials file is rewritten and fsynced: in a worker thread."""
        return await trio.to_thread.run_sync(scram_apis.alter, self.credentials, body)

    async def create_acls(self, ctx, body):
        """The ACL file is rewritten and fsynced: in a worker thread."""
        return await trio.to_thread.run_sync(acl_apis.create, self.authorizer, ctx, body)

    async def describe_acls(self, ctx, body):
        return acl_apis.describe(self.authorizer, ctx, body)

    async def delete_acls(self, ctx, body):
        return await trio.to_thread.run_sync(acl_apis.delete, self.authorizer, ctx, body)

    async def remove_acls(self, acls) -> None:
        await trio.to_thread.run_sync(self.authorizer.remove, acls)
