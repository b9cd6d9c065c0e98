"""Each listener's security, built once at startup from the configuration, so that a bad
setting stops ``groupbroker serve`` with a clear message before it listens."""

from __future__ import annotations

import logging
import ssl
import time
from dataclasses import dataclass, field
from functools import partial

from security.acls import authorizer_named
from security.credentials import MECHANISMS as SCRAM_MECHANISMS, CredentialStore
from security.jaas import parse_jaas
from security.listeners import Listener
from security.sasl.oauthbearer import OAuthBearerServer
from security.sasl.plain import PlainServer
from security.sasl.scram import ScramServer
from security.sasl.session import SaslSession
from security.settings import ListenerSettings, SettingsError
from security.tls import PrincipalMapper, server_context

log = logging.getLogger("groupsecurity")
SASL_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
#: Kafka's largest SASL frame before authentication (sasl.server.max.receive.size)
DEFAULT_SASL_MAX_RECEIVE = 524288


@dataclass(frozen=True)
class ListenerSecurity:
    listener: Listener
    tls: ssl.SSLContext | None             # SSL and SASL_SSL
    principals: PrincipalMapper            # a client certificate's subject -> principal name
    #: SASL listeners: enabled mechanism -> a new server for one exchange
    mechanisms: dict = field(default_factory=dict)
    reauth_ms: dict = field(default_factory=dict)      # mechanism -> connections.max.reauth.ms
    sasl_max_receive: int = DEFAULT_SASL_MAX_RECEIVE

    @property
    def sasl(self) -> bool:
        return self.listener.sasl

    def new_session(self) -> SaslSession:
        return SaslSession(self.mechanisms, self.reauth_ms.__getitem__)


def build_security(config) -> dict[str, ListenerSecurity]:
    """Listener name -> its security; SettingsError if a setting cannot be served."""
    authorizer_named(config.props)
    built = {}
    credentials = CredentialStore(config.data_dir)
    if "sasl.jaas.config" in config.props:
        log.warning("Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring "
                    "config (listener.name.<listener>.<mechanism>.sasl.jaas.config)")
    for listener in config.listeners:
        settings = ListenerSettings(config.props, listener)
        mechanisms = _mechanisms(settings, credentials) if listener.sasl else {}
        built[listener.name] = ListenerSecurity(
            listener, server_context(settings, sasl=listener.sasl) if listener.tls else None,
            PrincipalMapper(settings.get("ssl.principal.mapping.rules")), mechanisms,
            {m: _int(settings, f"{m.lower()}.connections.max.reauth.ms", "connections.max.reauth.ms", 0)
             for m in mechanisms},
            _int(settings, None, "sasl.server.max.receive.size", DEFAULT_SASL_MAX_RECEIVE))
    return built


def _mechanisms(settings: ListenerSettings, credentials: CredentialStore) -> dict:
    """The listener's sasl.enabled.mechanisms, each with what makes its servers."""
    name = settings.listener.name
    enabled = [m.strip().upper() for m in (settings.get("sasl.enabled.mechanisms") or "GSSAPI").split(",") if m.strip()]
    if not enabled:
        raise SettingsError(f"listener {name}: No SASL mechanisms are enabled")
    unserved = [m for m in enabled if m not in SASL_MECHANISMS]
    if unserved:
        default = " (Kafka's default)" if unserved == ["GSSAPI"] and settings.get("sasl.enabled.mechanisms") is None else ""
        raise SettingsError(f"listener {name}: sasl.enabled.mechanisms {', '.join(unserved)}{default} is not "
                            f"served: set it to some of {', '.join(SASL_MECHANISMS)}")
    servers = {}
    for mechanism in enabled:
        jaas_name = f"{settings.prefix}{mechanism.lower()}.sasl.jaas.config"
        jaas = settings.listener_only(f"{mechanism.lower()}.sasl.jaas.config")
        options = parse_jaas(jaas, jaas_name)[1] if jaas else {}
        if mechanism == "PLAIN":
            users = {key[len("user_"):]: value for key, value in options.items() if key.startswith("user_")}
            if not users:
                raise SettingsError(f"listener {name}: PLAIN needs its users in {jaas_name} "
                                    f"(org.apache.kafka.common.security.plain.PlainLoginModule required "
                                    f'user_alice="alice-secret";)')
            servers[mechanism] = partial(PlainServer, users)
        elif mechanism in SCRAM_MECHANISMS:
            servers[mechanism] = partial(ScramServer, mechanism, credentials)
        else:
            servers[mechanism] = partial(OAuthBearerServer, options, lambda: time.time() * 1000)
    return servers


def _int(settings: ListenerSettings, listener_only: str | None, name: str, default: int) -> int:
    raw = (settings.listener_only(listener_only) if listener_only else None) or settings.get(name)
    try:
        return default if raw is None else int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw}: not a whole number") from None
