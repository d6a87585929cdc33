"""The relay on the real emulator: events it cannot read are parked as FAILED, without spending a
delivery attempt, while good events flow."""

from __future__ import annotations

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox


def test_poison_events_are_parked_as_failed_while_good_events_flow(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    good = add_orders(db, settings, 5)
    poison = {
        "no-type": ({"eventType": None}, "eventType must be a non-empty string"),
        "text-payload": ({"payload": "not a map"}, "payload must be a map, got str"),
        "bad-attempts": ({"attempts": "two"}, "attempts must be a whole number"),
        "other-id": ({"eventId": "someone-else"}, "eventId must equal the document id"),
        "nan": ({"payload": {"total": float("nan")}}, "payload cannot be encoded as JSON"),
        "no-time": ({"createdAt": "yesterday"}, "createdAt must be a timestamp"),
    }
    for event_id, (fields, _) in poison.items():
        add_raw_event(db, settings, event_id, **fields)

    summary = make_relay(db, settings, receiver.url).run()

    assert (summary["processed"], summary["poisoned"], summary["failed"]) == (5, 6, 6)
    assert sorted(r.event_id for r in receiver.received) == good
    events = outbox(db, settings)
    for event_id, (_, reason) in poison.items():
        assert events[event_id]["status"] == "FAILED"
        assert events[event_id]["lastError"].startswith(f"poison event: {reason}")
        assert events[event_id]["attempts"] != 1  # never counted as a delivery attempt
