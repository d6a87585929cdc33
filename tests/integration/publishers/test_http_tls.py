"""The transport's libcurl handles over TLS against a real local HTTPS server: a certificate
their CA bundle vouches for is accepted and its connection kept alive; one for another name is
refused (verification and the host name check are on)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pycurl
import pytest

from firestore_outbox.publishers.base import Outcome
from firestore_outbox.publishers.http.curl import CurlFailure, Handle
from firestore_outbox.publishers.http.failures import describe
from firestore_outbox.publishers.http.routes import Routes
from tests.support.tls_certificates import self_signed_localhost
from tests.support.wire_servers import answer, read_request


class TlsServer:
    """HTTPS on 127.0.0.1 with a self-signed certificate for `localhost` (`cert` is also
    the CA bundle that trusts it); answers 200 to every request, keeping connections alive."""

    def __init__(self, directory: Path) -> None:
        self.cert, key_file = self_signed_localhost(directory)
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(self.cert, key_file)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.accepted = 0
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with self._context.wrap_socket(conn, server_side=True) as tls:
                buffer = bytearray()
                while read_request(tls, buffer) is not None:
                    tls.sendall(answer(200))
        except (OSError, ssl.SSLError):
            pass  # a client that refused our certificate

    def close(self) -> None:
        # Shut down first, which ends the blocked accept(): a thread left in it would be
        # restarted on the descriptor's number, another listener's by then (RawServer).
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._accepting.join(5)
        self._listener.close()


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[TlsServer]:
    server = TlsServer(tmp_path)
    yield server
    server.close()


def post(handle: Handle, url: str) -> int:
    route = Routes().route(url)
    return handle.post(url, route, None, b"{}", ["Content-Type: application/json"], 10).status


def test_a_trusted_certificate_is_accepted_and_its_connection_kept(tls_server: TlsServer) -> None:
    url = f"https://localhost:{tls_server.port}/events"
    handle = Handle(connect_timeout=2, read_timeout=2, ca_file=str(tls_server.cert))
    assert [post(handle, url) for _ in range(3)] == [200] * 3
    assert tls_server.accepted == 1
    handle.close()


def test_a_certificate_for_another_name_is_refused(tls_server: TlsServer) -> None:
    url = f"https://127.0.0.1:{tls_server.port}/events"  # the certificate names localhost
    handle = Handle(connect_timeout=2, read_timeout=2, ca_file=str(tls_server.cert))
    with pytest.raises(CurlFailure) as refused:
        post(handle, url)
    outcome, error = describe(refused.value.code, refused.value.message, sent=refused.value.sent)
    assert outcome is Outcome.CHANNEL and "127.0.0.1" in error, error
    assert refused.value.code == pycurl.E_PEER_FAILED_VERIFICATION
    handle.close()
