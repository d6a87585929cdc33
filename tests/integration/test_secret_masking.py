"""Secrets in `DOWNSTREAM_SERVICE_URL` stay out of `lastError` and the logs in every form a
downstream or a library writes them: the path alone, a query value alone, decoded, re-escaped
in upper or lower case; user info goes out as HTTP Basic auth and nowhere else."""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Iterator
from urllib.parse import unquote

import pytest
import urllib3
from google.cloud import firestore

from firestore_outbox.config.secrets import configured_secrets
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.observability.logs import configure_logging
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher
from tests.support.helpers import add_orders, make_relay, outbox

DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", b"{}", 1)
PATH_TOKEN = "tok-9a8b7c6d5e4f3a2b"
# A query value written with lower-case escapes: `ab/cd+ef==` once decoded.
QUERY_TOKEN = "ab%2fcd%2bef%3d%3d"
PASSWORD = "pa55:word"


def secret_url(receiver: Receiver) -> str:
    base = receiver.url.removesuffix("/events").replace("http://", "")
    return f"http://relay:pa55%3Aword@{base}/hooks/{PATH_TOKEN}?sig={QUERY_TOKEN}&v=1"


def spellings() -> list[str]:
    """Every form of the secrets a leak could take."""
    decoded = unquote(QUERY_TOKEN)
    return [
        PATH_TOKEN,
        QUERY_TOKEN,
        QUERY_TOKEN.upper().replace("AB", "ab").replace("CD", "cd").replace("EF", "ef"),
        decoded,
        PASSWORD,
        base64.b64encode(f"relay:{PASSWORD}".encode()).decode(),
    ]


ECHOES = {
    "path": lambda r: r.path.partition("?")[0],
    "query value": lambda r: r.path.partition("sig=")[2].partition("&")[0],
    "decoded target": lambda r: unquote(r.path),
    "upper-case escapes": lambda r: r.path.replace("%2f", "%2F").replace("%3d", "%3D"),
    "authorization": lambda r: r.headers.get("authorization", ""),
}


@pytest.mark.parametrize("echo", ECHOES)
def test_no_spelling_of_a_url_secret_reaches_an_error(receiver: Receiver, echo: str) -> None:
    receiver.respond = lambda r: ReceiverAnswer(
        503, body=f"unknown hook {ECHOES[echo](r)}".encode()
    )
    result = HttpPublisher(secret_url(receiver), connect_timeout=1, read_timeout=2).publish(
        DELIVERY
    )
    assert result.outcome is Outcome.RETRY and result.error
    assert result.error.startswith("HTTP 503: unknown hook ") and "***" in result.error
    assert [s for s in spellings() if s in result.error] == []


def test_user_info_is_sent_as_basic_auth_not_in_the_request_line(receiver: Receiver) -> None:
    url = secret_url(receiver)
    result = HttpPublisher(url, connect_timeout=1, read_timeout=2).publish(DELIVERY)
    assert result.outcome is Outcome.DELIVERED
    [request] = receiver.received
    token = base64.b64encode(f"relay:{PASSWORD}".encode()).decode()
    assert request.headers["authorization"] == f"Basic {token}"
    assert "relay" not in request.path and request.path.startswith("/hooks/")


@pytest.fixture
def debug_log() -> Iterator[io.StringIO]:
    """The root logger at DEBUG writing into a buffer through the app's JSON formatter."""
    root = logging.getLogger()
    saved = (root.level, root.handlers[:])
    buffer = io.StringIO()
    root.handlers = [logging.StreamHandler(buffer)]
    yield buffer
    root.handlers = saved[1]
    root.setLevel(saved[0])


def test_urllib3_debug_lines_are_masked_too(receiver: Receiver, debug_log: io.StringIO) -> None:
    url = secret_url(receiver)

    def echo_everything(request: Received) -> ReceiverAnswer:
        return ReceiverAnswer(500, body=(request.path + " " + unquote(request.path)).encode())

    receiver.respond = echo_everything
    configure_logging(configured_secrets({"DOWNSTREAM_SERVICE_URL": url}), "DEBUG")
    result = HttpPublisher(url, connect_timeout=1, read_timeout=2).publish(DELIVERY)
    # The relay's direct connections log nothing per request; urllib3's pool (proxied URLs,
    # other libraries) logs each request line at DEBUG.
    urllib3.PoolManager().request("POST", url, body=b"{}", retries=False)
    logging.getLogger("firestore_outbox.test").warning("attempt failed: %s", result.error)
    logging.getLogger("firestore_outbox.test").debug("decoded %s", unquote(url))

    lines = debug_log.getvalue()
    assert '"logger":"urllib3.connectionpool"' in lines  # urllib3 did log the request
    assert [s for s in spellings() if s in lines] == []


def test_last_error_in_firestore_names_no_spelling_of_the_urls_secrets(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    receiver.respond = lambda r: ReceiverAnswer(
        503, body=" ".join(echo(r) for echo in ECHOES.values()).encode()
    )
    [event_id] = add_orders(db, settings, 1)
    summary = make_relay(db, settings, secret_url(receiver)).run()
    assert summary["retried"] == 1
    last_error = outbox(db, settings)[event_id]["lastError"]
    assert last_error.startswith("attempt 1: HTTP 503: ***")
    assert [s for s in spellings() if s in last_error] == []
