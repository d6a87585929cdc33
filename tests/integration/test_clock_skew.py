"""Clock skew: a relay whose clock runs ahead takes back a live lease; the consumer's inbox
absorbs the duplicate it causes."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from google.cloud import firestore

from app.config import Settings
from app.order_counter import OrderCounter, ReceiverConfig
from app.receiver import Answer, Received, Receiver
from app.relay import core
from tests.helpers import FAST, add_orders, make_relay, outbox

SECRET = "whsec-0123456789abcdef"


def test_a_relay_with_a_fast_clock_redelivers_a_live_lease_and_the_inbox_absorbs_it(
    db: firestore.Client, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    [event_id] = add_orders(db, settings, 1)
    counter = OrderCounter(db, ReceiverConfig(signing_secrets=(SECRET,)))
    answers: list[str] = []
    skewed: dict[str, object] = {}
    first = threading.Event()

    def downstream(request: Received) -> Answer:
        if not first.is_set():
            first.set()
            # While relay A's lease is live, relay B runs with a clock a lock timeout ahead.
            ahead = dt.timedelta(seconds=FAST.lock_timeout_seconds + 1)
            real = core._utcnow
            monkeypatch.setattr(core, "_utcnow", lambda: real() + ahead)
            skewed.update(make_relay(db, settings, receiver.url, signing_secrets=(SECRET,)).run())
            monkeypatch.setattr(core, "_utcnow", real)
        answer = counter(request)
        answers.append(answer.body.decode())
        return answer

    with Receiver(downstream) as receiver:
        relay = make_relay(db, settings, receiver.url, signing_secrets=(SECRET,))
        summary = relay.run()

    assert (skewed["reclaimed"], skewed["processed"]) == (1, 1)  # B took A's live lease
    assert summary["lostLeases"] == 1  # A's settle was refused: B had moved the event on
    assert [a.split('"status": "')[1].split('"')[0] for a in answers] == ["applied", "duplicate"]
    assert outbox(db, settings)[event_id]["status"] == "PROCESSED"
    counts = {d.id: d.get("orders") for d in db.collection("order_counts").get()}
    assert counts == {"customer-0": 1}
