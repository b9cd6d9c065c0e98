"""Which code answers each API this broker serves; the served set is what ApiVersions advertises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import RESPONSES
from protocol.registry import API_TABLE

from broker.dispatch.api_versions import SERVED_APIS, api_versions_answer
from broker.cluster.topology import Topology
from broker.config import BrokerConfig
from broker.data.plane import DataPlane
from broker.faults.rules import ConnectionDropped, Faults, error_answer
from broker.group_runtime.router import GroupRouter
from broker.security import acl_apis, scram_apis
from broker.security.acls import authorizer_of
from broker.dispatch.authorization import Authorization
from broker.security.credentials import CredentialStore


@dataclass(slots=True)
class Call:
    """One request as the handlers see it: API, version, who sent it."""
    api_key: int
    version: int
    client_id: str
    client_host: str
    #: shard tickets the answer must wait for before it is sent (their records made durable)
    barriers: list = field(default_factory=list)
    #: returns once the client has hung up (a parked request may then give up); None: never
    until_closed: Callable[[], Awaitable[None]] | None = None
    #: the node the request came to (in a cluster, only some partitions and groups are its)
    node_id: int = -1
    #: the listener it came on (answers name the endpoints of that listener)
    listener: str = ""
    #: who sent it: ``User:name`` (from SASL or a client certificate), else User:ANONYMOUS
    principal: str = "User:ANONYMOUS"


class Handlers:
    def __init__(self, config: BrokerConfig, topology: Topology, on_topics_deleted, faults: Faults):
        self.config, self.faults = config, faults
        self.data = DataPlane(config, topology, on_topics_deleted)
        self.routes = {ApiKey.API_VERSIONS: self._api_versions, ApiKey.SASL_HANDSHAKE: self._sasl_handshake,
                       ApiKey.SASL_AUTHENTICATE: self._sasl_authenticate,
                       ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self._describe_scram,
                       ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self._alter_scram,
                       ApiKey.CREATE_ACLS: self._create_acls, ApiKey.DESCRIBE_ACLS: self._describe_acls,
                       ApiKey.DELETE_ACLS: self._delete_acls, **self.data.routes}
        self.credentials = CredentialStore(config.data_dir)
        #: Kafka's StandardAuthorizer when authorizer.class.name names it; else everything is allowed
        self.authorizer = authorizer_of(config)
        self.authorization = None if self.authorizer is None else Authorization(
            self.authorizer, self.data.topic_name, self.data.topic_exists, config.auto_create_topics_enable)
        if self.authorization is not None:
            self.data.may_read = self.authorization.may_read
        self._groups: GroupRouter | None = None
        self._served = self._versions()

    def serve_coordinators(self, groups: GroupRouter, transactions) -> None:
        """Add the group and transaction APIs (once their coordinators exist)."""
        self.routes.update({key: groups.handle for key in groups.routes})
        self.routes.update(transactions.routes)
        self._groups = groups
        self._served = self._versions()
        assert set(self.routes) == SERVED_APIS, "the dispatch table and SERVED_APIS disagree"

    def _versions(self) -> frozenset[tuple[int, int]]:
        return frozenset((key, v) for key in self.routes
                         for v in range(API_TABLE[key].min_version, API_TABLE[key].max_version + 1))

    def serves(self, api_key: int, version: int) -> bool:
        return (api_key, version) in self._served

    async def handle(self, ctx, body):
        rule = self.faults.take(ctx, body) if self.faults.rules else None
        if rule is not None:
            if rule.delay_ms:
                await trio.sleep(rule.delay_ms / 1000)
            elif rule.drop:
                raise ConnectionDropped(f"fault injection, {rule.describe()}")
            else:
                return error_answer(ctx.api_key, ctx.version, body, rule.error)
        if self.authorization is not None:
            return await self.authorization.handle(ctx, body, self.routes[ctx.api_key])
        return await self.routes[ctx.api_key](ctx, body)

    def begin(self, ctx, body):
        """Start a request that may be pipelined (see :meth:`GroupRouter.pipelines`) without
        waiting: its shard ticket and the function that completes its response; else None
        (also while fault rules are armed, or ACLs enforced: they apply in :meth:`handle`)."""
        if self._groups is None or self.faults.rules or self.authorization is not None \
                or not self._groups.pipelines(ctx.api_key, ctx.version):
            return None
        return self._groups.begin(ctx, body)

    async def _api_versions(self, ctx, body):
        return api_versions_answer(ctx.version, body, list(self.routes))

    async def _sasl_handshake(self, ctx, body):
        """On a connection already authenticated, or a listener without SASL (a SASL listener's
        session answers the exchange itself): KafkaApis' ILLEGAL_SASL_STATE."""
        return RESPONSES[ApiKey.SASL_HANDSHAKE].cls(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())

    async def _sasl_authenticate(self, ctx, body):
        return RESPONSES[ApiKey.SASL_AUTHENTICATE].cls(
            error_code=ErrorCode.ILLEGAL_SASL_STATE, auth_bytes=b"",
            error_message="SaslAuthenticate request received after successful authentication")

    async def _describe_scram(self, ctx, body):
        return scram_apis.describe(self.credentials, body)

    async def _alter_scram(self, ctx, body):
        """The credentials file is rewritten and fsynced: in a worker thread."""
        return await trio.to_thread.run_sync(scram_apis.alter, self.credentials, body)

    async def _create_acls(self, ctx, body):
        """The ACL file is rewritten and fsynced: in a worker thread."""
        return await trio.to_thread.run_sync(acl_apis.create, self.authorizer, ctx, body)

    async def remove_acls(self, acls) -> None:
        await trio.to_thread.run_sync(self.authorizer.remove, acls)

    async def _describe_acls(self, ctx, body):
        return acl_apis.describe(self.authorizer, ctx, body)

    async def _delete_acls(self, ctx, body):
        return await trio.to_thread.run_sync(acl_apis.delete, self.authorizer, ctx, body)

    def close(self) -> None:
        """Flush and close the topic logs."""
        self.data.close()
