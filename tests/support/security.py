"""A broker with every security protocol at once, and each client's settings for it.

Listeners: PLAINTEXT (the tests' own look-ups), SASL_PLAINTEXT (PLAIN, SCRAM, OAUTHBEARER),
SSL (client certificates required) and SASL_SSL (PLAIN, SCRAM); certificates from
``groupbroker certs``' own code, SCRAM users stored as ``groupbroker users`` stores them.
"""

from __future__ import annotations

from pathlib import Path

from security.credentials import CredentialStore, new_credential

from security.certificates import write_certificates

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              + " ".join(f'user_{name}="{password}"' for name, password in USERS.items()) + ";")
#: the principal of the client certificate write_certificates makes (RFC 2253, most specific first)
CERT_PRINCIPAL = "User:CN=client,O=groupbroker development"


def secured_props(certs: Path, **extra) -> dict:
    return {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs / "broker-keystore.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs / "ca.pem"),
        "ssl.client.auth": "required",
        **extra}


def make_certs(folder: Path) -> Path:
    write_certificates(folder, ["localhost", "127.0.0.1"])
    return folder


def add_users(data_dir: Path) -> None:
    store = CredentialStore(str(data_dir))
    store.change(upserts=[(name, mechanism, new_credential(mechanism, password))
                          for name, password in USERS.items() for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")])


#: the three ways in the acceptance asks for: mode -> (listener, how the client proves who it is)
MODES = {"sasl_ssl-scram": ("SASL_SSL", "SCRAM-SHA-512"), "ssl-certificate": ("SSL", None),
         "sasl_plaintext-plain": ("SASL_PLAINTEXT", "PLAIN")}


def librdkafka_settings(mode: str, certs: Path, user: str = "alice", password: str | None = None) -> dict:
    """confluent-kafka and kcat (-X) settings for ``mode``."""
    listener, mechanism = MODES[mode]
    settings = {"security.protocol": listener.lower()}
    if mechanism:
        settings.update({"sasl.mechanism": mechanism, "sasl.username": user,
                         "sasl.password": USERS[user] if password is None else password})
    if "SSL" in listener:
        settings["ssl.ca.location"] = str(certs / "ca.pem")
    if listener == "SSL":
        settings.update({"ssl.certificate.location": str(certs / "client.pem"),
                         "ssl.key.location": str(certs / "client.key")})
    return settings


def kafka_python_settings(mode: str, certs: Path, user: str = "alice", password: str | None = None) -> dict:
    """kafka-python's settings for ``mode`` (aiokafka takes the same, with an ssl_context)."""
    listener, mechanism = MODES[mode]
    settings = {"security_protocol": listener}
    if mechanism:
        settings.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                         "sasl_plain_password": USERS[user] if password is None else password})
    if "SSL" in listener:
        settings["ssl_cafile"] = str(certs / "ca.pem")
    if listener == "SSL":
        settings.update({"ssl_certfile": str(certs / "client.pem"), "ssl_keyfile": str(certs / "client.key")})
    return settings


def aiokafka_settings(mode: str, certs: Path, **who) -> dict:
    from aiokafka.helpers import create_ssl_context
    settings = kafka_python_settings(mode, certs, **who)
    files = {key: settings.pop(f"ssl_{key}", None) for key in ("cafile", "certfile", "keyfile")}
    if files["cafile"]:
        settings["ssl_context"] = create_ssl_context(**{k: v for k, v in files.items() if v})
    return settings
