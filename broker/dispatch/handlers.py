"""Dispatch: each request to the part of the broker its declaration (``ApiSpec``) names,
through fault injection and, where ACLs are enforced, its authorization check."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from operator import attrgetter

import trio

from protocol.errors import ErrorCode

from security.acls import authorizer_of
from security.authorization import Authorization
from security.credentials import CredentialStore

from broker.api_spec import Runs
from broker.config import BrokerConfig
from broker.data.errors import answering_errors
from broker.data.plane import DataPlane
from broker.dispatch.connection_apis import ConnectionApis
from broker.dispatch.served import API_SPECS, whole_request_error
from broker.faults.rules import ConnectionDropped, Faults
from broker.group_runtime.router import GroupRouter
from broker.txn_runtime.apis import TransactionApis


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
    #: the connection it came on (share sessions end with theirs)
    connection: object = None


class Handlers:
    """Every request to the part that answers it (the data plane ``data``, the group router
    ``groups``, the transaction coordinator's ``transactions``, or the connection's own APIs,
    made here), after the fault rules and, where ACLs are enforced, its authorization check."""

    def __init__(self, config: BrokerConfig, faults: Faults, data: DataPlane, groups: GroupRouter,
                 transactions: TransactionApis):
        self.config, self.faults, self.data, self._groups = config, faults, data, groups
        self.credentials = CredentialStore(config.data_dir)
        #: Kafka's StandardAuthorizer when authorizer.class.name names it; else everything is allowed
        self.authorizer = authorizer_of(config)
        self.connection = ConnectionApis(API_SPECS.values(), self.credentials, self.authorizer, config.features)
        #: the APIs whose feature is not finalized: UNSUPPORTED_VERSION, as Kafka answers them
        self.feature_off = frozenset(key for key, spec in API_SPECS.items()
                                     if spec.feature and config.features.get(spec.feature, 0) < 1)
        self.authorization = None if self.authorizer is None else Authorization(
            self.authorizer, self.data.topic_name, self.data.topic_exists, config.auto_create_topics_enable,
            whole_request_error)
        if self.authorization is not None:
            self.data.may_read = self.authorization.may_read
            if groups.streams_topics is not None:
                groups.streams_topics.denied = self.authorization.denied_creation
        #: the part of the broker that answers each kind of API (``ApiSpec.runs``)
        self.parts = {Runs.CONNECTION: self.connection, Runs.DATA_PLANE: data,
                      Runs.GROUP_COORDINATOR: groups, Runs.TRANSACTION_COORDINATOR: transactions}
        #: API key -> the coroutine function that answers it: its declared handler
        self.routes: dict[int, Callable] = {}
        for spec in API_SPECS.values():
            handler = attrgetter(spec.handler)(self.parts[spec.runs])
            self.routes[spec.key] = answering_errors(handler, spec.failed) if spec.answers_refusals else handler
        self._served = frozenset((key, v) for key in self.routes for v in API_SPECS[key].versions)

    def serves(self, api_key: int, version: int) -> bool:
        return (api_key, version) in self._served

    async def handle(self, ctx, body):
        spec = API_SPECS[ctx.api_key]
        if ctx.api_key in self.feature_off:
            return spec.failed(ctx.version, body, ErrorCode.UNSUPPORTED_VERSION, None)
        rule = self.faults.take(ctx, body) if self.faults.rules else None
        if rule is not None:
            if rule.delay_ms:
                await trio.sleep(rule.delay_ms / 1000)
            elif rule.drop:
                raise ConnectionDropped(f"fault injection, {rule.describe()}")
            else:
                return spec.failed(ctx.version, body, rule.error, None)
        if self.authorization is not None:
            return await self.authorization.handle(ctx, body, self.routes[ctx.api_key], spec.authorize)
        return await self.routes[ctx.api_key](ctx, body)

    def begin(self, ctx, body):
        """Start a request that may be pipelined (its declaration says which) without waiting:
        its shard ticket and the function that completes its response; else None (also while
        fault rules are armed, or ACLs enforced: they apply in :meth:`handle`)."""
        if self.faults.rules or self.authorization is not None or ctx.api_key in self.feature_off \
                or not API_SPECS[ctx.api_key].pipelined(ctx.version):
            return None
        return self._groups.begin(ctx, body)

    def close(self) -> None:
        """Flush and close the topic logs."""
        self.data.close()
