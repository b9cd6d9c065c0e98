"""What the broker does not serve reaches the user as a clear log line, never a silent hang.

Clients that do not speak plaintext Kafka get their connection closed at once, with a line that
says what they spoke (instead of being read as a frame of hundreds of megabytes)."""

from __future__ import annotations

import http.client
import socket
import ssl

import pytest

from tests.support.processes import wait_until


def test_a_tls_client_on_a_plaintext_listener_is_named_in_the_log(broker):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            context.wrap_socket(raw, server_hostname="localhost")       # closed, not left hanging
    wait_until(lambda: "TLS handshake on a PLAINTEXT listener" in broker.log_text(), 5, "the log line")


def test_an_http_request_is_named_in_the_log(broker):
    conn = http.client.HTTPConnection("127.0.0.1", broker.port, timeout=5)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        conn.request("GET", "/")
        conn.getresponse()
    conn.close()
    wait_until(lambda: "HTTP request (GET) on a Kafka listener" in broker.log_text(), 5, "the log line")

