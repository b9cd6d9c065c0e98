"""Kafka's SASL exchange on the wire (SaslServerAuthenticator's states), request by request:
what is served before authentication, how each failure is answered and closed, SaslHandshake
v0's bare tokens, OAUTHBEARER's JSON challenge, session lifetimes and re-authentication
(KIP-368), and hostile clients that never finish (each closes only its own connection)."""

from __future__ import annotations

import base64
import json
import logging
import select
import socket
import time

import pytest

from kafka_client.blocking import BlockingClient, ConnectionFailed
from broker.testing.embedded import EmbeddedBroker
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from protocol.messages import REQUESTS
from tests.support.security import add_users, make_certs, secured_props

METADATA = REQUESTS[ApiKey.METADATA].cls(topics=None)


def handshake_request(mechanism: str):
    return REQUESTS[ApiKey.SASL_HANDSHAKE].cls(mechanism=mechanism)


def authenticate_request(token: bytes):
    return REQUESTS[ApiKey.SASL_AUTHENTICATE].cls(auth_bytes=token)


def plain(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def start(tmp_path_factory, certs, **extra) -> EmbeddedBroker:
    data = tmp_path_factory.mktemp("data")
    add_users(data)
    return EmbeddedBroker(data, secured_props(certs, **extra)).start()


@pytest.fixture(scope="module")
def secured(tmp_path_factory, certs):
    broker = start(tmp_path_factory, certs, **{"connection.failed.authentication.delay.ms": "0",
                                               "connections.max.reauth.ms": "1500"})
    yield broker
    broker.stop()


def connect(broker, listener="SASL_PLAINTEXT") -> BlockingClient:
    host, port = broker.bootstrap_for(listener).split(",")[0].rsplit(":", 1)
    client = BlockingClient(host, int(port), timeout=5)
    return client


def authenticated(broker, user="alice", password="alice-secret", version=2) -> tuple[BlockingClient, object]:
    client = connect(broker)
    client.negotiate()
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("PLAIN")).error_code == ErrorCode.NONE
    answer = client.call(ApiKey.SASL_AUTHENTICATE, version, authenticate_request(plain(user, password)))
    assert answer.error_code == ErrorCode.NONE, answer
    return client, answer


def closed_unanswered(client: BlockingClient) -> bool:
    """The broker closed the connection (or reset it: it had bytes left unread) unanswered."""
    try:
        client.receive()
    except ConnectionFailed:
        return True
    return False


def test_before_authentication_only_api_versions_and_the_handshake_are_served(secured, caplog):
    client = connect(secured)
    client.negotiate()
    client.send(ApiKey.METADATA, 12, METADATA)
    assert closed_unanswered(client)        # no answer at all, as Kafka
    assert any("Unexpected Kafka request of type METADATA during SASL handshake." in r.getMessage()
               for r in caplog.records)


def test_a_second_api_versions_closes_at_once(secured):
    client = connect(secured)
    client.negotiate()
    client.send(ApiKey.API_VERSIONS, 3, client.session.api_versions_request(3))
    assert closed_unanswered(client)


def test_an_unsupported_mechanism_is_answered_with_the_enabled_ones_then_closed(secured):
    client = connect(secured)
    answer = client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("GSSAPI"))
    assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert set(answer.mechanisms) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
    client.send(ApiKey.API_VERSIONS, 0, client.session.api_versions_request(0))
    assert closed_unanswered(client)


def test_another_request_during_the_exchange_is_answered_illegal_sasl_state(secured):
    client = connect(secured)
    client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("PLAIN"))
    answer = client.call(ApiKey.FIND_COORDINATOR, 3, REQUESTS[ApiKey.FIND_COORDINATOR].cls(key="g"))
    assert answer.error_code == ErrorCode.ILLEGAL_SASL_STATE
    client.send(ApiKey.API_VERSIONS, 0, client.session.api_versions_request(0))
    assert closed_unanswered(client)


def test_plain_through_a_v0_handshake_uses_bare_tokens(secured):
    client = connect(secured)
    assert client.call(ApiKey.SASL_HANDSHAKE, 0, handshake_request("PLAIN")).error_code == ErrorCode.NONE
    token = plain("bob", "bob-secret")
    client.sock.sendall(len(token).to_bytes(4, "big") + token)
    assert client.sock.recv(4) == b"\0\0\0\0"          # PLAIN's empty challenge, framed bare
    client.negotiate()                                  # then Kafka requests as usual
    assert client.call(ApiKey.METADATA, 12, METADATA).brokers


def test_scram_for_an_unknown_user_fails_with_kafkas_generic_message(secured):
    client = connect(secured)
    client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("SCRAM-SHA-256"))
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, authenticate_request(b"n,,n=mallory,r=abcdefgh"))
    assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert answer.error_message == ("Authentication failed during authentication due to invalid credentials "
                                    "with SASL mechanism SCRAM-SHA-256")


def test_sasl_apis_after_authentication_and_on_a_plaintext_listener_are_illegal(secured):
    client, _ = authenticated(secured, version=1)
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 1, authenticate_request(b""))
    assert (answer.error_code, answer.error_message) == (
        ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication")
    plaintext = connect(secured, "PLAINTEXT")
    assert plaintext.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("PLAIN")).error_code == \
        ErrorCode.ILLEGAL_SASL_STATE


def unsecured_jwt(claims: dict) -> bytes:
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    token = f"{part({'alg': 'none'})}.{part(claims)}."
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


def test_oauthbearer_takes_an_unsecured_token_and_refuses_an_expired_one_with_its_json(secured):
    now = time.time()
    client = connect(secured)
    client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("OAUTHBEARER"))
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 2,
                         authenticate_request(unsecured_jwt({"sub": "carol", "iat": now, "exp": now + 3600})))
    assert answer.error_code == ErrorCode.NONE
    assert 0 < answer.session_lifetime_ms <= 1500         # connections.max.reauth.ms, below the token's life
    client = connect(secured)
    client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("OAUTHBEARER"))
    challenge = client.call(ApiKey.SASL_AUTHENTICATE, 2,
                            authenticate_request(unsecured_jwt({"sub": "carol", "exp": now - 60})))
    assert (challenge.error_code, challenge.auth_bytes) == (ErrorCode.NONE, b'{"status":"invalid_token"}')
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, authenticate_request(b"\x01"))
    assert (answer.error_code, answer.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED,
                                                         '{"status":"invalid_token"}')


def test_a_session_ends_after_connections_max_reauth_ms_unless_renewed(secured):
    client, answer = authenticated(secured)
    assert answer.session_lifetime_ms == 1500
    renewing, _ = authenticated(secured, user="alice")
    time.sleep(1.6)
    # the expired session's next request is dropped with the connection, as Kafka does
    client.send(ApiKey.METADATA, 12, METADATA)
    assert closed_unanswered(client)
    # re-authenticating (KIP-368) renews it, as the same principal only
    assert renewing.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("PLAIN")).error_code == ErrorCode.NONE
    again = renewing.call(ApiKey.SASL_AUTHENTICATE, 2, authenticate_request(plain("alice", "alice-secret")))
    assert (again.error_code, again.session_lifetime_ms) == (ErrorCode.NONE, 1500)
    assert renewing.call(ApiKey.METADATA, 12, METADATA).brokers
    switching, _ = authenticated(secured, user="alice")
    time.sleep(1.1)
    switching.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("PLAIN"))
    refused = switching.call(ApiKey.SASL_AUTHENTICATE, 2, authenticate_request(plain("bob", "bob-secret")))
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED, "Cannot change principals during re-authentication from User.alice: "
                                              "User.bob")


def test_librdkafka_reauthenticates_before_its_session_ends(secured, certs, caplog):
    """librdkafka starts over at 90 % of the session; Kafka refuses a re-authentication within
    a second of the last, so sessions this short must last over 1.1 s."""
    import confluent_kafka
    caplog.set_level(logging.INFO, logger="groupbroker.server")
    from tests.support.security import librdkafka_settings
    producer = confluent_kafka.Producer({"bootstrap.servers": secured.bootstrap_for("SASL_PLAINTEXT"),
                                         **librdkafka_settings("sasl_plaintext-plain", certs)})
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        producer.produce("reauth", b"x")
        producer.flush(5)
        time.sleep(0.1)
    assert producer.flush(5) == 0
    by_connection: dict[str, int] = {}
    for record in caplog.records:
        if "authenticated as User:alice (PLAIN)" in record.getMessage():
            peer = record.getMessage().split()[2]
            by_connection[peer] = by_connection.get(peer, 0) + 1
    assert max(by_connection.values()) >= 2, by_connection     # the same connection, authenticated again


# --- hostile clients ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded(tmp_path_factory, certs):
    broker = start(tmp_path_factory, certs, **{"connections.max.idle.ms": "1000"})
    yield broker
    broker.stop()


def assert_others_carry_on(broker, session: BlockingClient) -> None:
    assert session.call(ApiKey.METADATA, 12, METADATA).brokers        # a connection already in use
    fresh, _ = authenticated(broker)                                   # and a new one
    assert fresh.call(ApiKey.METADATA, 12, METADATA).brokers


def test_a_tls_handshake_of_garbage_closes_only_its_connection(guarded, caplog):
    session, _ = authenticated(guarded)
    host, port = guarded.bootstrap_for("SSL").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(b"\x16\x03\x01\x00\x40" + bytes(range(64)) * 4)
        answer = b"".join(iter(lambda: raw.recv(1024), b""))        # until the broker closes it
    assert answer == b"" or answer[0] == 0x15                         # nothing but a TLS alert
    assert any("TLS handshake failed" in r.getMessage() for r in caplog.records)
    assert_others_carry_on(guarded, session)


def test_a_sasl_token_over_the_size_limit_closes_only_its_connection(guarded, caplog):
    session, _ = authenticated(guarded)
    client = connect(guarded)
    client.call(ApiKey.SASL_HANDSHAKE, 1, handshake_request("PLAIN"))
    client.send(ApiKey.SASL_AUTHENTICATE, 2, authenticate_request(b"x" * 600_000))
    assert closed_unanswered(client)
    assert any("Failing SASL authentication due to invalid receive size" in r.getMessage() for r in caplog.records)
    assert_others_carry_on(guarded, session)


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SSL"])
def test_a_client_that_never_authenticates_is_closed_after_connections_max_idle_ms(guarded, listener):
    session, _ = authenticated(guarded)
    host, port = guarded.bootstrap_for(listener).rsplit(":", 1)
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=5) as silent:
        while not select.select([silent], [], [], 0.3)[0]:
            assert session.call(ApiKey.METADATA, 12, METADATA).brokers     # a busy client is served
        assert silent.recv(1024) == b""                    # closed by the broker, unprompted
    assert 0.9 < time.monotonic() - started < 3
    assert_others_carry_on(guarded, session)
