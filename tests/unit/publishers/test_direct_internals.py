"""Pins what `firestore_outbox.publishers.http.connections` and `_DeadlineConnection.post` rely on
in urllib3 and
http.client: an upgrade that moves them fails here, not in production."""

from __future__ import annotations

import http.client
import inspect

from urllib3.connection import HTTPConnection


def test_urllib3_connections_still_say_whether_the_peer_closed_them() -> None:
    assert isinstance(vars(HTTPConnection)["is_connected"], property)


def test_http_client_still_sends_the_head_through_send_then_the_body() -> None:
    source = inspect.getsource(http.client.HTTPConnection._send_output)  # type: ignore[attr-defined]
    assert source.index("self.send(msg)") < source.index("self.send(chunk)")
    assert "self.endheaders(body" in inspect.getsource(
        http.client.HTTPConnection._send_request  # type: ignore[attr-defined]
    )


def test_http_client_still_builds_its_answer_from_response_class() -> None:
    assert "self.response_class(" in inspect.getsource(http.client.HTTPConnection.getresponse)
