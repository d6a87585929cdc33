"""`outbox relay` (one pass): due events delivered to a real local downstream, `expireAt` set."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, outbox
from tests.support.operator_commands import (
    Run,
    run_outbox,  # noqa: F401  (the `run` fixture)
)


def test_relay_delivers_due_events_and_stamps_expire_at(
    run: Run,
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event_ids = add_orders(db, settings, 3)
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", receiver.url)
    monkeypatch.setenv("OUTBOX_RETENTION_SECONDS", "3600")

    code, out, _ = run("relay")

    assert code == 0
    summary = json.loads(out)
    assert (summary["status"], summary["processed"]) == ("ok", 3)
    assert sorted(r.event_id for r in receiver.received) == event_ids
    for event in outbox(db, settings).values():
        lag = event["expireAt"] - event["processedAt"]
        assert event["status"] == "PROCESSED"
        assert abs(lag - dt.timedelta(hours=1)) < dt.timedelta(seconds=5), lag
