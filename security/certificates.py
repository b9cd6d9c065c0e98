"""A development CA and the certificates it signs for a broker and a client (the files
``groupbroker certs`` writes, and the tests' TLS listeners use). Not for production: the keys
are unencrypted and the CA signs whatever it is asked to.

``ca.pem`` (and ``ca.key``), ``broker.pem`` (the broker's certificate then the CA's) and
``broker.key``, ``broker-keystore.pem`` (key and chain in one file: Kafka's PEM key store),
``client.pem`` and ``client.key``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DAYS = 825                       # the longest validity clients accept for a server certificate


def write_certificates(folder: Path, hosts: list[str], client_name: str = "client") -> list[Path]:
    """Make the CA, then the broker's certificate (for ``hosts``, the first its CN) and the
    client's (CN ``client_name``); write them into ``folder``; the paths written."""
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


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
