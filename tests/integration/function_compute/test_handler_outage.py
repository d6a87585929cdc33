"""The relay handler with Firestore frozen mid-run (SIGSTOP on the session's second emulator): an
error summary, and nothing lost on later invocations."""

from __future__ import annotations

import time

import pytest

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator
from function_compute.relay_handler import handler
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    fc_context,
    use,
)
from tests.support.helpers import add_orders, outbox, relay_environment


def test_firestore_unavailable_mid_run_returns_an_error_and_loses_nothing(
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    pausable_emulator: FirestoreEmulator,
) -> None:
    emulator = pausable_emulator
    with Receiver() as receiver:
        settings = Settings(project_id="outbox-pause", emulator_host=emulator.host_port)
        db = get_db_client(settings)
        event_ids = add_orders(db, settings, 40)

        def pause_on_the_tenth(request: Received) -> ReceiverAnswer:
            if len(receiver.received) == 10:
                emulator.pause()
            return ReceiverAnswer(200)

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

        receiver.respond = lambda _: ReceiverAnswer(200)
        for n in range(40):
            events = outbox(db, settings)
            if {e["status"] for e in events.values()} == {"PROCESSED"}:
                break
            handler(TIMER_EVENT, fc_context(f"after-{n}"))
            time.sleep(0.25)

    assert {e["status"] for e in events.values()} == {"PROCESSED"}
    assert sorted(events) == event_ids
    assert {r.event_id for r in receiver.received} == set(event_ids)
