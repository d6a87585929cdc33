"""An idle run (most timer ticks) with partition leases: its survey finds nothing open and
the run ends there, before any publishing pool or settler is set up."""

from __future__ import annotations

import threading

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, make_relay


def test_an_idle_run_starts_no_settler_and_no_publishing_thread(
    db: firestore.Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[str] = []
    start = threading.Thread.start

    def noted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    with Receiver() as receiver:
        relay = make_relay(db, settings, receiver.url)
        monkeypatch.setattr(threading.Thread, "start", noted)
        idle = relay.run()
        monkeypatch.undo()
        assert (idle.status.value, idle.stopped_by.value, idle.processed) == ("ok", "drained", 0)
        assert [n for n in started if n.startswith(("relay-settle", "relay-publish"))] == []
        # and the next run with work sets them up and delivers
        [event_id] = add_orders(db, settings, 1)
        busy = relay.run()
        relay.close()
    assert busy.processed == 1
    assert [str(r.event_id) for r in receiver.received] == [event_id]
