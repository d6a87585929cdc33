"""`outbox console` over HTTP against the emulator: who may use it, what a POST needs, that
what Firestore holds is shown as text and secrets never, and that an unanswering Firestore
gives a plain page within its deadline."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.api_servers import api_server
from tests.support.console_pages import (  # noqa: F401
    SECRET,
    XSS,
    in_process_console,
    prepared_console_outbox,
    serving,
)
from tests.support.faults import stopped_emulator  # noqa: F401  (the `frozen_emulator` fixture)
from tests.support.operator_commands import Run, run_outbox, update_times  # noqa: F401

pytestmark = pytest.mark.emulator
TOKEN = "console-token-0123456789abcdef"


def get(url: str, **kwargs: Any) -> requests.Response:
    return requests.get(url, timeout=30, allow_redirects=False, **kwargs)


def test_pages_answer_on_loopback_without_a_token(console_url: str) -> None:
    for path in ("/", "/failed", "/held", "/event?id=f-422", "/requeue?type=PaymentTaken"):
        answer = get(console_url + path)
        assert answer.status_code == 200, (path, answer.text)
        assert "default-src 'none'" in answer.headers["Content-Security-Policy"]
        assert answer.headers["X-Frame-Options"] == "DENY"


def test_a_request_named_for_another_host_is_refused_without_a_token(console_url: str) -> None:
    # A page elsewhere reaching 127.0.0.1 through a rebound DNS name sends its own Host.
    answer = get(console_url + "/failed", headers={"Host": "attacker.example:80"})
    assert answer.status_code == 403
    assert "f-422" not in answer.text


def test_beyond_loopback_every_request_needs_the_token(settings: Settings) -> None:
    with api_server(
        settings, serve="console", args=["--host", "0.0.0.0"], OUTBOX_CONSOLE_TOKEN=TOKEN
    ) as server:
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        refused = get(url + "/failed")
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert get(url + "/failed", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert get(url + "/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        signed_in = requests.post(url + "/login", data={"token": TOKEN}, allow_redirects=False)
        assert signed_in.status_code == 303
        assert "HttpOnly" in signed_in.headers["Set-Cookie"]
        assert get(url + "/held", cookies=signed_in.cookies).status_code == 200
        # The token itself is a secret: never shown, not even on the page it opens.
        assert TOKEN not in get(url + "/", cookies=signed_in.cookies).text


def test_beyond_loopback_without_a_token_it_refuses_to_start(run: Run) -> None:
    code, out, err = run("console", "--host", "0.0.0.0", "--port", "0")
    assert code == 2
    assert "OUTBOX_CONSOLE_TOKEN" in err and "listening" not in out


def test_a_post_without_the_csrf_token_is_refused_and_writes_nothing(
    console_url: str, db: firestore.Client, settings: Settings
) -> None:
    before = update_times(db, settings)
    for path, form in (
        ("/requeue", {"all": "1"}),
        ("/requeue", {"all": "1", "csrf": "guessed"}),
        ("/release", {"aggregate": "order-held"}),
    ):
        answer = requests.post(console_url + path, data=form, timeout=30)
        assert answer.status_code == 403, (path, form)
        assert "CSRF" in answer.text
    # The dry run is a GET and writes nothing either.
    assert "5</strong> FAILED events to requeue" in get(console_url + "/requeue?all=1").text
    assert update_times(db, settings) == before


def test_a_post_from_another_origin_is_refused_even_with_the_token(
    console_url: str, db: firestore.Client, settings: Settings
) -> None:
    page = get(console_url + "/requeue?id=f-422").text
    csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    before = update_times(db, settings)
    answer = requests.post(
        console_url + "/requeue",
        data={"id": "f-422", "csrf": csrf},
        headers={"Origin": "http://attacker.example"},
        timeout=30,
    )
    assert answer.status_code == 403
    assert update_times(db, settings) == before


def test_markup_from_firestore_shows_as_text_and_secrets_never(console_url: str) -> None:
    for path in ("/failed", "/event?id=xss", "/requeue?id=xss", "/"):
        page = get(console_url + path).text
        assert "<script>window.pwned" not in page and "<img src=x" not in page, path
        assert SECRET not in page, path
    event = get(console_url + "/event?id=xss").text
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in event
    assert "&lt;img src=x onerror=&quot;window.pwned = 2&quot;&gt;" in event


def test_an_event_id_firestore_cannot_hold_is_a_bad_request(console_url: str) -> None:
    answer = get(console_url + "/event", params={"id": "a/b"})
    assert answer.status_code == 400
    assert "EVENT_ID" in answer.text


def test_a_stopped_firestore_gives_a_plain_page_within_its_deadline(
    frozen_emulator: str, settings: Settings
) -> None:
    stopped = Settings(
        project_id=settings.project_id, emulator_host=frozen_emulator, firestore_timeout_seconds=1
    )
    with serving(stopped) as url:
        for path in ("/", "/live", "/failed", "/event?id=f-422", "/held"):
            started = time.monotonic()
            answer = get(url + path)
            took = time.monotonic() - started
            assert answer.status_code == 503, (path, answer.text)
            assert f"Firestore at {frozen_emulator} did not answer within 1 s" in answer.text
            assert "Traceback" not in answer.text
            assert took < 5, (path, took)  # the 1 s deadline, and a margin for a busy machine


def test_failed_events_filter_by_type_and_aggregate_as_the_dry_run_counts(
    console_url: str,
) -> None:
    for query, matched in (
        ("", 5),
        ("?type=OrderCreated", 3),
        ("?aggregate=payment-7", 1),
        ("?type=OrderCreated&aggregate=payment-7", 0),
    ):
        page = get(console_url + "/failed" + query).text
        assert f"<strong>{matched}</strong> FAILED events match" in page, query
    dry_run = get(console_url + "/requeue?aggregate=payment-7").text
    assert "<strong>1</strong> FAILED events to requeue" in dry_run
    assert "f-422" in dry_run and "f-503-0" not in dry_run
