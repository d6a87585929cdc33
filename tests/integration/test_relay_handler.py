"""`function_compute.relay_handler.handler`, called as Function Compute calls it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud import firestore

from app.config import Settings
from app.emulator import FirestoreEmulator
from app.firestore_client import get_db_client
from app.receiver import Answer, Received, Receiver
from function_compute import relay_handler
from function_compute.relay_handler import handler, initialize
from tests.helpers import add_orders, outbox, relay_environment
from tests.wire_servers import Connection, RawServer, Request, answer, serve_forever

TIMER_EVENT = (
    b'{"triggerTime": "2026-11-21T08:00:00Z", "triggerName": "relay-timer", "payload": ""}'
)


def fc_context(request_id: str = "req-1", timeout: int = 60) -> SimpleNamespace:
    return SimpleNamespace(request_id=request_id, function=SimpleNamespace(timeout=timeout))


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """A clean environment and a working directory without a `.env` file."""
    for name in list(os.environ):
        if name.startswith(("FIRESTORE_", "RELAY_", "DOWNSTREAM_", "OUTBOX_", "ORDERS_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return {}


def use(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(
    "event", [TIMER_EVENT, TIMER_EVENT.decode(), json.loads(TIMER_EVENT), b"", None, b"\xff{"]
)
def test_a_timer_invocation_delivers_every_due_event(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    event: Any,
) -> None:
    use(monkeypatch, relay_environment(settings, receiver.url))
    event_ids = add_orders(db, settings, 30)

    summary = handler(event, fc_context("req-42"))

    assert summary["status"] == "ok"
    assert (summary["processed"], summary["failed"], summary["retried"]) == (30, 0, 0)
    assert summary["requestId"] == "req-42" and summary["durationMs"] >= 0
    assert summary["trigger"] == ("relay-timer" if event and event != b"\xff{" else None)
    assert sorted(r.event_id for r in receiver.received) == event_ids
    assert {e["processingInstanceId"] for e in outbox(db, settings).values()} == {"req-42"}


def test_the_function_timeout_bounds_the_invocation(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use(monkeypatch, relay_environment(settings, receiver.url))
    add_orders(db, settings, 3)
    # 7 s less the Firestore timeout (5 s) and a second leaves 1 s: not enough for an attempt.
    summary = handler(TIMER_EVENT, fc_context(timeout=7))
    assert (summary["stoppedBy"], summary["processed"]) == ("budget", 0)
    assert handler(TIMER_EVENT, fc_context(timeout=60))["processed"] == 3


@pytest.mark.parametrize(
    ("missing", "named"),
    [
        ("DOWNSTREAM_SERVICE_URL", "DOWNSTREAM_SERVICE_URL"),
        ("FIRESTORE_EMULATOR_HOST", "FIRESTORE_CREDENTIALS_PATH"),
        ("RELAY_MAX_ATTEMPTS", "RELAY_MAX_ATTEMPTS"),
    ],
)
def test_a_configuration_problem_returns_an_error_naming_the_variable(
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    missing: str,
    named: str,
) -> None:
    variables = relay_environment(settings, receiver.url)
    if missing == "RELAY_MAX_ATTEMPTS":
        variables[missing] = "five"  # malformed rather than missing
    else:
        del variables[missing]
    use(monkeypatch, variables)

    with caplog.at_level(logging.ERROR):
        summary = handler(TIMER_EVENT, fc_context())

    assert summary["status"] == "error" and named in summary["error"]
    assert (summary["processed"], summary["failed"]) == (0, 0)
    assert named in caplog.text


def test_a_service_account_key_without_a_project_needs_firestore_project_id(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch, key_info: dict[str, Any]
) -> None:
    key = {k: v for k, v in key_info.items() if k != "project_id"}
    use(
        monkeypatch,
        {
            "DOWNSTREAM_SERVICE_URL": "https://example.com/hook",
            "FIRESTORE_CREDENTIALS_JSON": json.dumps(key),
        },
    )
    summary = handler(TIMER_EVENT, fc_context())
    assert summary["status"] == "error" and "FIRESTORE_PROJECT_ID" in summary["error"]
    assert key_info["private_key"][40:80] not in json.dumps(summary)


def test_importing_the_handler_needs_no_configuration_and_connects_nowhere(tmp_path: Path) -> None:
    # An unreachable emulator address: importing must not try it (nor fail on anything).
    env = {"PATH": "/usr/bin:/bin", "FIRESTORE_EMULATOR_HOST": "127.0.0.1:1"}
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise AssertionError('network used at import')\n"
        "socket.socket.connect = refuse\n"
        "import function_compute.relay_handler as h\n"
        "print(callable(h.handler), callable(h.initialize))\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(root)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_firestore_unavailable_mid_run_returns_an_error_and_loses_nothing(
    environment: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FirestoreEmulator() as emulator, Receiver() as receiver:
        settings = Settings(project_id="outbox-pause", emulator_host=emulator.host_port)
        db = get_db_client(settings)
        event_ids = add_orders(db, settings, 40)

        def pause_on_the_tenth(request: Received) -> Answer:
            if len(receiver.received) == 10:
                emulator.pause()
            return Answer(200)

        receiver.respond = pause_on_the_tenth
        use(
            monkeypatch,
            relay_environment(
                settings,
                receiver.url,
                RELAY_FIRESTORE_TIMEOUT_SECONDS="2",
                RELAY_BATCH_SIZE="20",
                RELAY_CONCURRENCY="4",
                # Settles are retried until the run's deadline: keep the outage run short.
                RELAY_TIME_BUDGET_SECONDS="8",
            ),
        )
        try:
            failed = handler(TIMER_EVENT, fc_context("during-outage"))
        finally:
            emulator.resume()
        assert failed["status"] == "error" and failed["error"].startswith("Firestore")
        assert failed["unsettled"] > 0  # delivered, never settled: delivered again later

        receiver.respond = lambda _: Answer(200)
        for n in range(40):
            events = outbox(db, settings)
            if {e["status"] for e in events.values()} == {"PROCESSED"}:
                break
            handler(TIMER_EVENT, fc_context(f"after-{n}"))
            time.sleep(0.25)

    assert {e["status"] for e in events.values()} == {"PROCESSED"}
    assert sorted(events) == event_ids
    assert {r.event_id for r in receiver.received} == set(event_ids)


def test_initialize_warms_the_relay_and_never_raises_on_bad_configuration(
    settings: Settings,
    receiver: Receiver,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        initialize(fc_context())  # nothing configured yet
    assert "DOWNSTREAM_SERVICE_URL" in caplog.text

    use(monkeypatch, relay_environment(settings, receiver.url))
    initialize(fc_context())
    warmed = relay_handler._cached
    assert warmed is not None
    handler(TIMER_EVENT, fc_context())
    assert relay_handler._cached is warmed  # the same client and session are reused


def test_a_configuration_change_closes_the_old_relays_connections(
    db: firestore.Client,
    settings: Settings,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    accept = serve_forever(lambda connection, _: connection.send(answer(200)))
    with RawServer(accept) as old, RawServer(accept) as new:
        use(monkeypatch, relay_environment(settings, old.url))
        add_orders(db, settings, 1)
        assert handler(TIMER_EVENT, fc_context())["processed"] == 1
        assert old.open_connections == 1  # kept alive for the next invocation

        use(monkeypatch, relay_environment(settings, new.url))
        add_orders(db, settings, 1)
        assert handler(TIMER_EVENT, fc_context())["processed"] == 1
        assert (new.accepted, new.open_connections) == (1, 1)
        assert old.wait_for_open_connections(0) == 0  # closed, not left to the old relay


def test_closing_the_old_relay_does_not_break_a_delivery_it_still_has_in_flight(
    db: firestore.Client,
    settings: Settings,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With instance concurrency an invocation may still run on the old relay: its
    connections are closed when it ends, not under it."""
    asked, answer_now = threading.Event(), threading.Event()

    def held(connection: Connection, _: Request) -> None:
        asked.set()
        answer_now.wait(10)
        connection.send(answer(200))

    accept = serve_forever(lambda connection, _: connection.send(answer(200)))
    slow = {"RELAY_HTTP_TIMEOUT_SECONDS": "5", "RELAY_LOCK_TIMEOUT_SECONDS": "30"}
    with RawServer(serve_forever(held)) as old, RawServer(accept) as new:
        use(monkeypatch, relay_environment(settings, old.url, **slow))
        add_orders(db, settings, 1)
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(handler, TIMER_EVENT, fc_context("req-old"))
            assert asked.wait(10)
            use(monkeypatch, relay_environment(settings, new.url, **slow))
            assert handler(TIMER_EVENT, fc_context("req-new"))["status"] == "ok"
            answer_now.set()
            assert first.result(timeout=20)["processed"] == 1
        assert old.wait_for_open_connections(0) == 0


@pytest.mark.parametrize(
    "url", ["http://[::1/t0ps3cret", "http://127.0.0.1:99999/t0ps3cret", "gopher://h/t0ps3cret"]
)
def test_a_malformed_url_is_an_error_summary_naming_the_variable(
    settings: Settings, environment: dict[str, str], monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    use(monkeypatch, relay_environment(settings, url))
    summary = handler(TIMER_EVENT, fc_context())
    assert summary["status"] == "error" and summary["processed"] == 0
    assert summary["error"].startswith("DOWNSTREAM_SERVICE_URL must be")
    assert "t0ps3cret" not in json.dumps(summary)
