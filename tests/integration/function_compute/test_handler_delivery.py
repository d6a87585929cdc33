"""A timer invocation of the relay handler delivers every due event, within the function's
timeout."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from function_compute.relay_handler import handler
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    configured_relay,  # noqa: F401  (the relay configured for the emulator)
    fc_context,
    use,
)
from tests.support.helpers import add_orders, outbox, relay_environment


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


@pytest.mark.usefixtures("configured_relay")
def test_the_function_timeout_bounds_the_invocation(
    db: firestore.Client, settings: Settings
) -> None:
    add_orders(db, settings, 3)
    # 7 s less the Firestore timeout (5 s) and a second leaves 1 s: not enough for an attempt,
    # said as such (not `ok`, not a plain `budget`), and nothing tried.
    summary = handler(TIMER_EVENT, fc_context(timeout=7))
    assert (summary["status"], summary["stoppedBy"], summary["processed"]) == (
        "error",
        "budgetTooShort",
        0,
    )
    assert "RELAY_FIRESTORE_TIMEOUT_SECONDS (5 s)" in summary["error"]
    assert handler(TIMER_EVENT, fc_context(timeout=60))["processed"] == 3
