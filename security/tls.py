"""TLS for the SSL and SASL_SSL listeners: Kafka's PEM key and trust stores turned into an
``ssl.SSLContext``, and the principal a client certificate stands for.

Kafka's names: ``ssl.keystore.type=PEM`` with ``ssl.keystore.location`` (one file holding the
private key and the certificate chain) or ``ssl.keystore.certificate.chain`` and
``ssl.keystore.key`` (the PEM text itself); ``ssl.key.password`` for an encrypted key;
``ssl.truststore.location`` or ``ssl.truststore.certificates`` for the CAs that client
certificates must chain to; ``ssl.client.auth`` none, requested or required; each may be given
per listener (``listener.name.<name>.ssl.*``). JKS and PKCS12 stores are Java's: convert them
to PEM (``openssl pkcs12 -nodes``).
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile

from security.settings import ListenerSettings, SettingsError

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def server_context(settings: ListenerSettings, *, sasl: bool = False) -> ssl.SSLContext:
    """The listener's TLS context; SettingsError names what is missing or unreadable. On a
    SASL_SSL listener, as in Kafka, ssl.client.auth counts only with the listener prefix."""
    store_type = (settings.get("ssl.keystore.type") or "PEM").upper()
    if store_type != "PEM":
        raise SettingsError(f"ssl.keystore.type={store_type}: groupbroker reads PEM key stores only "
                            f"(ssl.keystore.type=PEM; convert a {store_type} store with openssl)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p.strip() for p in (settings.get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")]
    unknown = [p for p in enabled if p not in _PROTOCOLS]
    if unknown or not enabled:
        raise SettingsError(f"ssl.enabled.protocols: {', '.join(unknown) or 'none'} not supported "
                            f"(TLSv1.2, TLSv1.3)")
    context.minimum_version = min((_PROTOCOLS[p] for p in enabled), key=lambda v: v.value)
    context.maximum_version = max((_PROTOCOLS[p] for p in enabled), key=lambda v: v.value)
    password = settings.get("ssl.key.password") or settings.get("ssl.keystore.password") or None
    location, chain, key = (settings.get(n) for n in
                            ("ssl.keystore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key"))
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif chain and key:
            _load_inline_chain(context, chain, key, password)
        else:
            raise SettingsError(f"listener {settings.listener.name} ({settings.listener.protocol}) needs a key "
                                f"store: ssl.keystore.location (a PEM file with the key and certificate "
                                f"chain) or ssl.keystore.certificate.chain and ssl.keystore.key")
        trust_file, trust_text = settings.get("ssl.truststore.location"), settings.get("ssl.truststore.certificates")
        if trust_file or trust_text:
            context.load_verify_locations(cafile=trust_file or None, cadata=trust_text or None)
    except (OSError, ssl.SSLError, ValueError) as e:
        if isinstance(e, SettingsError):
            raise
        raise SettingsError(f"listener {settings.listener.name}: cannot load its TLS key or trust store: {e}") \
            from None
    auth = ((settings.listener_only("ssl.client.auth") if sasl else settings.get("ssl.client.auth")) or "none").lower()
    if auth not in CLIENT_AUTH:
        raise SettingsError(f"ssl.client.auth={auth}: one of none, requested, required")
    if auth != "none" and not (trust_file or trust_text):
        raise SettingsError(f"ssl.client.auth={auth} needs a trust store to check client certificates "
                            f"against (ssl.truststore.location)")
    context.verify_mode = CLIENT_AUTH[auth]
    ciphers = settings.get("ssl.cipher.suites")
    if ciphers:
        context.set_ciphers(":".join(c.strip() for c in ciphers.split(",")))
    return context


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """ssl loads key stores from files only: the PEM text goes through a private temporary file."""
    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        context.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


#: Kafka's principal for a connection that has not proved who it is
ANONYMOUS = "User:ANONYMOUS"


def client_principal(stream, mapper: PrincipalMapper) -> str:
    """The principal of a TLS connection (a trio.SSLStream after its handshake): ``User:`` and
    the mapped subject of the client's certificate, ANONYMOUS without one."""
    der = stream.getpeercert(binary_form=True)
    return ANONYMOUS if not der else "User:" + mapper.name(certificate_subject(der))


def certificate_subject(der: bytes) -> str:
    """A certificate's subject as Kafka's X500Principal.getName() gives it (RFC 2253: most
    specific first, e.g. ``CN=client,O=groupbroker``)."""
    from cryptography import x509     # only a TLS client's certificate needs it: not at start-up
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


class PrincipalMapper:
    """``ssl.principal.mapping.rules``: ``RULE:pattern/replacement/[LU]`` and ``DEFAULT`` in order;
    the first whose pattern matches the whole subject names the principal."""

    _RULE = re.compile(r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU])?)\s*(?:,|$)")

    def __init__(self, rules: str | None):
        self.text = rules or "DEFAULT"
        self.rules: list[tuple[re.Pattern, str, str] | None] = []    # None: DEFAULT
        position = 0
        while position < len(self.text):
            match = self._RULE.match(self.text, position)
            if match is None:
                raise SettingsError(f"ssl.principal.mapping.rules: cannot read {self.text[position:]!r} "
                                    f"(expected RULE:pattern/replacement/[LU] or DEFAULT)")
            if match.group(1) == "DEFAULT":
                self.rules.append(None)
            else:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as e:
                    raise SettingsError(f"ssl.principal.mapping.rules: bad pattern {match.group(2)!r}: {e}") \
                        from None
                self.rules.append((pattern, _python_replacement(match.group(3)), match.group(4) or ""))
            position = match.end()

    def name(self, subject: str) -> str:
        for rule in self.rules:
            if rule is None:
                return subject
            pattern, replacement, case = rule
            if pattern.fullmatch(subject):
                name = pattern.sub(replacement, subject, count=1)
                return name.lower() if case == "L" else name.upper() if case == "U" else name
        raise SettingsError(f"No rules apply to {subject}, rules {self.text}")


def _python_replacement(java: str) -> str:
    """Java's ``$1`` group references in Python's ``\\g<1>`` form."""
    return re.sub(r"\$(\d+)", r"\\g<\1>", java.replace("\\", "\\\\"))
