"""``groupbroker certs DIR``: a development CA and the broker's and a client's certificates, so
that TLS is one command away. Not for production: the keys are unencrypted and the CA signs
whatever this command asks it to.

Writes ``ca.pem`` (and ``ca.key``), ``broker.pem`` (the broker's certificate then the CA's) and
``broker.key``, ``broker-keystore.pem`` (key and chain in one file, Kafka's PEM key store),
``client.pem`` and ``client.key``, and ``broker.properties``: a PLAINTEXT and an SSL listener
with client certificates requested, for ``groupbroker serve --config`` (or a real Kafka
broker). Then prints the client settings for kafka-python and librdkafka.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

DAYS = 825                       # the longest validity clients accept for a server certificate


def add_parser(commands) -> None:
    certs = commands.add_parser("certs", help="create a development CA, a broker and a client certificate")
    certs.add_argument("dir", help="the folder to write them to (created if need be)")
    certs.add_argument("--host", action="append", default=[], metavar="H",
                       help="a host name or address the broker is reached at (repeatable; "
                            "default localhost, 127.0.0.1 and ::1)")
    certs.add_argument("--client-name", default="client", help="the client certificate's CN (default client)")
    certs.add_argument("--ssl-port", type=int, default=9093,
                       help="the SSL listener's port in broker.properties (default 9093)")


def run(args) -> int:
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    hosts = args.host or ["localhost", "127.0.0.1", "::1"]
    written = write_certificates(folder, hosts, args.client_name)
    properties = folder / "broker.properties"
    properties.write_text(broker_properties(folder, hosts[0], args.ssl_port), encoding="utf-8")
    written.append(properties)
    out = sys.stdout
    out.write(f"wrote {', '.join(str(p) for p in written)}\n\n")
    out.write(f"serve with: groupbroker serve --config {properties}\n\n")
    out.write(client_settings(folder.resolve(), hosts[0], args.ssl_port))
    return 0


def write_certificates(folder: Path, hosts: list[str], client_name: str = "client") -> list[Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc)

    def name(common: str):
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "groupbroker development"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def certificate(subject, key, issuer, issuer_key, *, ca=False, extensions=()):
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=DAYS))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
        for extension in extensions:
            builder = builder.add_extension(extension, critical=False)
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False), critical=True)
        return builder.sign(issuer_key, hashes.SHA256())

    def pem(cert) -> bytes:
        return cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("groupbroker development CA")
    ca = certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    broker_key, client_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    alt_names = [x509.IPAddress(ipaddress.ip_address(h)) if _is_address(h) else x509.DNSName(h) for h in hosts]
    broker = certificate(name(hosts[0]), broker_key, ca_name, ca_key, extensions=[
        x509.SubjectAlternativeName(alt_names), x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])])
    client = certificate(name(client_name), client_key, ca_name, ca_key, extensions=[
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH])])
    files = {"ca.pem": pem(ca), "ca.key": key_pem(ca_key),
             "broker.pem": pem(broker) + pem(ca), "broker.key": key_pem(broker_key),
             "broker-keystore.pem": key_pem(broker_key) + pem(broker) + pem(ca),
             "client.pem": pem(client), "client.key": key_pem(client_key)}
    written = []
    for filename, content in files.items():
        path = folder / filename
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if filename.endswith(".key") else 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        written.append(path)
    return written


def broker_properties(folder: Path, host: str, ssl_port: int) -> str:
    folder = folder.resolve()
    bind = f"[{host}]" if ":" in host else host
    return "\n".join([
        "# written by groupbroker certs: a plaintext and a TLS listener (client certificates requested)",
        f"listeners=PLAINTEXT://{bind}:9092,SSL://{bind}:{ssl_port}",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={folder / 'broker-keystore.pem'}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={folder / 'ca.pem'}",
        "ssl.client.auth=requested",
        ""])


def client_settings(folder: Path, host: str, ssl_port: int) -> str:
    address = f"{host}:{ssl_port}" if ":" not in host else f"[{host}]:{ssl_port}"
    return "\n".join([
        "kafka-python / aiokafka:",
        f"    bootstrap_servers={address!r}, security_protocol='SSL',",
        f"    ssl_cafile={str(folder / 'ca.pem')!r},",
        f"    ssl_certfile={str(folder / 'client.pem')!r}, ssl_keyfile={str(folder / 'client.key')!r}",
        "librdkafka (confluent-kafka, kcat -X ...):",
        f"    bootstrap.servers={address}",
        "    security.protocol=ssl",
        f"    ssl.ca.location={folder / 'ca.pem'}",
        f"    ssl.certificate.location={folder / 'client.pem'}",
        f"    ssl.key.location={folder / 'client.key'}",
        ""])


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
