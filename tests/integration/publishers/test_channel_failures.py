"""Which failures are the channel's (`Outcome.CHANNEL`: the relay's breaker stops the run and
hands events back unspent) and which the event's or a passing fault's, against real local
servers: an HTTP endpoint, a refused port, an unresolvable name, a certificate nobody trusts,
a connection reset after the request went out, and a Function Compute endpoint."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget
from firestore_outbox.publishers.http.publisher import HttpPublisher
from firestore_outbox.testing.emulator import free_port
from tests.support.tls_certificates import self_signed_localhost
from tests.support.wire_servers import Connection, RawServer

DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", b"{}", 1)


def publish(url: str) -> tuple[Outcome, str]:
    result = HttpPublisher(url, connect_timeout=1.0, read_timeout=2.0).publish(DELIVERY)
    return result.outcome, result.error or ""


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        *[(status, Outcome.CHANNEL) for status in (401, 403, 404, 405)],
        *[(status, Outcome.REJECTED) for status in (400, 409, 413, 415, 422, 418)],
        *[(status, Outcome.RETRY) for status in (429, 503)],
    ],
)
def test_the_endpoint_refusing_us_is_the_channels_fault_a_bad_request_the_events(
    receiver: Receiver, status: int, outcome: Outcome
) -> None:
    receiver.respond = lambda _: ReceiverAnswer(status)
    assert publish(receiver.url) == (outcome, f"HTTP {status}")


def test_a_refused_connection_is_the_channels_fault() -> None:
    outcome, error = publish(f"http://127.0.0.1:{free_port()}/events")
    assert outcome is Outcome.CHANNEL and error.startswith("ConnectionError")


def test_a_name_that_does_not_resolve_is_the_channels_fault() -> None:
    outcome, error = publish("http://no-such-host.invalid/events")
    assert outcome is Outcome.CHANNEL and error.startswith("ConnectionError")


@pytest.fixture
def untrusted_tls_server(tmp_path: Path) -> Iterator[str]:
    """An HTTPS server whose self-signed certificate no CA vouches for."""
    cert, key = self_signed_localhost(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                context.wrap_socket(conn, server_side=True).close()
            except (OSError, ssl.SSLError):
                conn.close()  # the client refused our certificate: the point

    accepting = threading.Thread(target=serve, daemon=True)
    accepting.start()
    yield f"https://localhost:{listener.getsockname()[1]}/events"
    # A close alone leaves a socket whose accept() is blocked listening (tests/support/
    # wire_servers.py, RawServer.__exit__): shut it down first, which ends the accept().
    listener.shutdown(socket.SHUT_RDWR)
    accepting.join(5)
    listener.close()


def test_a_certificate_nobody_trusts_is_the_channels_fault(untrusted_tls_server: str) -> None:
    outcome, error = publish(untrusted_tls_server)
    assert outcome is Outcome.CHANNEL and "CERTIFICATE_VERIFY_FAILED" in error


def test_a_reset_after_the_request_went_out_is_retried() -> None:
    def reset(connection: Connection) -> None:
        connection.request()
        connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    with RawServer(reset) as server:
        outcome, error = publish(server.url)
    assert outcome is Outcome.RETRY and error.startswith("ConnectionError")


def fc_publisher(receiver: Receiver) -> FcPublisher:
    target = FcTarget(
        endpoint=receiver.url.removesuffix("/events"),
        service="orders",
        function="f",
        access_key_id="AKID",
        access_key_secret="fc-s3cret-key",
    )
    return FcPublisher(target, connect_timeout=1, read_timeout=2)


@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        (403, "AccessDenied", Outcome.CHANNEL),
        (401, "InvalidAccessKeyId", Outcome.CHANNEL),
        (403, "SignatureNotMatch", Outcome.CHANNEL),
        (404, "FunctionNotFound", Outcome.CHANNEL),
        (400, "ServiceNotFound", Outcome.CHANNEL),  # by its code, whatever the status
        (400, "InvalidArgument", Outcome.REJECTED),
        (413, "PayloadTooLarge", Outcome.REJECTED),
        (429, "ResourceThrottled", Outcome.RETRY),
    ],
)
def test_function_compute_errors_are_classified_by_status_and_code(
    receiver: Receiver, status: int, code: str, outcome: Outcome
) -> None:
    body = f'{{"ErrorCode":"{code}","ErrorMessage":"no"}}'.encode()
    receiver.respond = lambda _: ReceiverAnswer(status, body=body)
    result = fc_publisher(receiver).publish(DELIVERY)
    assert result.outcome is outcome and code in (result.error or "")
