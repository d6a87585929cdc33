"""The watchdog's webhook formats on a real local HTTP server, each signature recomputed here
from its published recipe: Lark's (Feishu's) custom bot, and the generic JSON signed as
Standard Webhooks sign (DingTalk's robot is checked by tests/support/robot_server.py); a
robot that refuses is a failure, never a silent success."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from firestore_outbox.consumer import verify_request
from firestore_outbox.health.settings import WatchdogSettings, WebhookFormat
from firestore_outbox.health.webhooks import WebhookFailed, post_alert
from firestore_outbox.signing import check_digest, verify

SECRET = "webhook-signing-secret-0123456789"
PROBLEMS = [("relay_stopped", "the relay last ran 9m ago")]


class Capture:
    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.answer: dict[str, Any] = {"code": 0}


@pytest.fixture
def server() -> Iterator[tuple[str, Capture]]:
    capture = Capture()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            capture.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
            data = json.dumps(capture.answer).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}/open-apis/bot/v2/hook/abc", capture
    finally:
        httpd.shutdown()
        httpd.server_close()


def settings(url: str, kind: WebhookFormat) -> WatchdogSettings:
    return WatchdogSettings(webhook_url=url, webhook_format=kind, webhook_secret=SECRET)


def test_lark_gets_a_text_message_signed_with_its_recipe(server: tuple[str, Capture]) -> None:
    url, capture = server
    post_alert(settings(url, WebhookFormat.LARK), "alert", PROBLEMS)
    [(_, raw)] = capture.requests
    body = json.loads(raw)
    assert body["msg_type"] == "text" and "relay_stopped" in body["content"]["text"]
    key = f"{body['timestamp']}\n{SECRET}".encode()
    expected = base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    assert body["sign"] == expected


def test_json_is_signed_as_standard_webhooks_sign(server: tuple[str, Capture]) -> None:
    url, capture = server
    post_alert(settings(url, WebhookFormat.JSON), "recovered", PROBLEMS)
    [(headers, raw)] = capture.requests
    body = json.loads(raw)
    assert (body["state"], body["problems"][0]["code"]) == ("recovered", "relay_stopped")
    content = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + raw
    mac = hmac.new(SECRET.encode(), content, hashlib.sha256).digest()
    assert f"v1,{base64.b64encode(mac).decode()}" in headers["webhook-signature"].split()
    # And a consumer of the library's verifies it as it verifies a delivery, attributes too,
    # with the public name docs/watchdog.md names.
    event = verify_request(headers, raw, [SECRET])
    assert event.attributes["type"] == "firestore-outbox.watchdog.recovered"
    verify(
        headers["webhook-id"],
        headers["webhook-timestamp"],
        headers["webhook-signature"],
        raw,
        [SECRET],
    )
    attributes = {k[3:]: v for k, v in headers.items() if k.startswith("ce-")}
    check_digest(headers["webhook-id"], {**attributes, "datacontenttype": "application/json"})


def test_a_robot_that_refuses_the_message_is_a_failure(server: tuple[str, Capture]) -> None:
    url, capture = server
    capture.answer = {"code": 19021, "msg": "sign match fail or timestamp is not within one hour"}
    with pytest.raises(WebhookFailed, match="code 19021") as raised:
        post_alert(settings(url, WebhookFormat.LARK), "alert", PROBLEMS)
    assert "/hook/abc" not in str(raised.value)  # the URL (its token) is never in an error
