"""Kafka's listener, TLS-principal, JAAS and SASL settings, read as Kafka reads them (and
refused with the reason Kafka gives)."""

from __future__ import annotations

import pytest

from security.jaas import parse_jaas
from security.listeners import build_listeners
from security.settings import SettingsError
from security.setup import build_security
from security.tls import PrincipalMapper

from broker.config import BrokerConfig, ConfigError


def test_default_is_one_plaintext_listener_on_localhost_9092():
    [listener] = build_listeners({})
    assert (listener.name, listener.protocol, listener.host, listener.port) == ("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)


def test_named_listeners_take_their_protocol_from_the_map_and_advertise_their_own_address():
    listeners = build_listeners({
        "listeners": "internal://127.0.0.1:9092, EXTERNAL://:9094, CONTROLLER://:9093",
        "advertised.listeners": "INTERNAL://broker:9092,EXTERNAL://public.example:19094",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER"})
    assert [(l.name, l.protocol, l.advertised_host, l.advertised_port) for l in listeners] == [
        ("INTERNAL", "PLAINTEXT", "broker", 9092), ("EXTERNAL", "SASL_SSL", "public.example", 19094)]
    assert listeners[1].tls and listeners[1].sasl and listeners[1].host == ""


def test_the_command_lines_host_and_port_replace_the_first_listeners():
    first, second = build_listeners({"listeners": "PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093"}, "127.0.0.1", 0)
    assert (first.host, first.port, second.port) == ("127.0.0.1", 0, 9093)


@pytest.mark.parametrize("props, message", [
    ({"listeners": "CLIENT://:9092"}, "no security protocol defined for listener CLIENT"),
    ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "each listener must have a different name"),
    ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "each listener must have a different port"),
    ({"listeners": "PLAINTEXT:/localhost:9092"}, "cannot read"),
    ({"listener.security.protocol.map": "PLAINTEXT:KERBEROS"}, "unknown security protocol"),
    ({"advertised.listeners": "SSL://h:1"}, "SSL is not among the listeners"),
    ({"connections.max.idle.ms": "100"}, "connection.failed.authentication.delay.ms=100 should always be less"),
])
def test_listener_settings_kafka_refuses(props, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.build(props)


def test_principal_mapping_rules_apply_in_order_with_case_and_default():
    mapper = PrincipalMapper(r"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, RULE:^CN=([^,]*),O=(.*)$/$1@$2/,DEFAULT")
    assert mapper.name("CN=Kafka-Client,OU=ServiceUsers,O=acme") == "kafka-client"
    assert mapper.name("CN=app,O=acme") == "app@acme"
    assert mapper.name("OU=nobody") == "OU=nobody"
    with pytest.raises(SettingsError, match="No rules apply to OU=x"):
        PrincipalMapper(r"RULE:^CN=(.*)$/$1/").name("OU=x")
    with pytest.raises(SettingsError, match="cannot read"):
        PrincipalMapper("RULE:nonsense")


def test_jaas_options_are_read_with_quotes_and_comments():
    module, options = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                                 '/* admin */ username="admin" password="a;b" user_alice="alice secret";', "x")
    assert module.endswith("PlainLoginModule")
    assert options == {"username": "admin", "password": "a;b", "user_alice": "alice secret"}
    with pytest.raises(SettingsError, match="not terminated by semi-colon"):
        parse_jaas("M required a=b", "x")


def security(props: dict):
    return build_security(BrokerConfig.build(props, data_dir="/nonexistent"))


def test_sasl_needs_mechanisms_groupbroker_serves():
    with pytest.raises(SettingsError, match=r"GSSAPI \(Kafka's default\) is not served"):
        security({"listeners": "SASL_PLAINTEXT://:0"})
    with pytest.raises(SettingsError, match="PLAIN needs its users in listener.name.sasl_plaintext.plain.sasl.jaas.config"):
        security({"listeners": "SASL_PLAINTEXT://:0", "sasl.enabled.mechanisms": "PLAIN"})
    built = security({"listeners": "SASL_PLAINTEXT://:0",
                      "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512,OAUTHBEARER",
                      "listener.name.sasl_plaintext.scram-sha-512.connections.max.reauth.ms": "60000"})
    assert list(built["SASL_PLAINTEXT"].mechanisms) == ["SCRAM-SHA-512", "OAUTHBEARER"]
    assert built["SASL_PLAINTEXT"].reauth_ms == {"SCRAM-SHA-512": 60000, "OAUTHBEARER": 0}


def test_acls_need_kafkas_authorizer_and_typed_super_users():
    with pytest.raises(SettingsError, match="knows no other authorizer"):
        security({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    with pytest.raises(SettingsError, match="principalType:principalName but got admin"):
        security({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                  "super.users": "User:ops;admin"})


def test_tls_listeners_need_a_pem_key_store():
    with pytest.raises(SettingsError, match="needs a key store"):
        security({"listeners": "SSL://:0"})
    with pytest.raises(SettingsError, match="PEM key stores only"):
        security({"listeners": "SSL://:0", "ssl.keystore.type": "JKS", "ssl.keystore.location": "x.jks"})
    with pytest.raises(SettingsError, match="cannot load its TLS key"):
        security({"listeners": "SSL://:0", "ssl.keystore.location": "/nonexistent.pem"})
