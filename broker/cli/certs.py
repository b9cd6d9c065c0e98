"""``groupbroker certs DIR``: a development CA and the broker's and a client's certificates
(security/certificates.py), so that TLS is one command away.

Also writes ``broker.properties``: a PLAINTEXT and an SSL listener with client certificates
requested, for ``groupbroker serve --config`` (or a real Kafka broker). Then prints the client
settings for kafka-python and librdkafka.
"""

from __future__ import annotations

import sys
from pathlib import Path

from security.certificates import write_certificates


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
