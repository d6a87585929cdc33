"""The relay on the real emulator, delivering to a real local HTTP server."""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import time

import pytest
from google.cloud import firestore

from app.config import Settings
from app.receiver import Answer, Received, Receiver
from app.relay.events import rfc3339
from app.relay.leases import Change, LeaseStore
from tests.helpers import add_orders, add_raw_event, make_relay, outbox, run_until, utcnow


def test_every_committed_event_is_delivered_once_and_processed(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    event_ids = add_orders(db, settings, 120)
    summary = make_relay(db, settings, receiver.url, batch_size=50).run(instance_id="run-1")

    assert summary["status"] == "ok" and summary["stoppedBy"] == "drained"
    assert (summary["processed"], summary["failed"], summary["leased"]) == (120, 0, 120)
    received = {r.event_id: r for r in receiver.received}
    assert sorted(received) == event_ids and len(receiver.received) == 120
    for event_id, event in outbox(db, settings).items():
        assert (event["status"], event["attempts"]) == ("PROCESSED", 1)
        assert event["processingInstanceId"] == "run-1" and event["processedAt"] is not None
        request = received[event_id]
        assert request.json() == event["payload"]
        assert request.headers["content-type"] == "application/json"
        assert request.headers["ce-specversion"] == "1.0"
        assert request.headers["ce-type"] == "OrderCreated"
        assert request.headers["ce-subject"] == event["aggregateId"]
        assert request.headers["ce-time"] == rfc3339(event["createdAt"])
        assert request.headers["idempotency-key"] == event_id
        assert request.headers["ce-source"].endswith("/documents/outbox")


@pytest.mark.parametrize(
    ("status", "retried"),
    [(400, False), (409, False), (422, False), (408, True), (425, True), (429, True), (500, True)],
)
def test_a_4xx_fails_at_once_while_408_425_429_and_5xx_are_retried(
    db: firestore.Client, settings: Settings, receiver: Receiver, status: int, retried: bool
) -> None:
    receiver.respond = lambda _: Answer(status, body=b"no such customer")
    [event_id] = add_orders(db, settings, 1)
    summary = make_relay(db, settings, receiver.url).run()

    event = outbox(db, settings)[event_id]
    assert event["attempts"] == 1 and len(receiver.received) == 1
    assert f"HTTP {status}: no such customer" in event["lastError"]
    if retried:
        assert (event["status"], summary["retried"]) == ("PENDING", 1)
        assert event["nextAttemptAt"] > event["updatedAt"]
    else:
        assert (event["status"], summary["failed"]) == ("FAILED", 1)
        assert event["lastError"].startswith("rejected after attempt 1")


def _slow(_: Received) -> Answer:
    time.sleep(1.0)  # longer than the relay's 0.5 s read timeout
    return Answer(200)


# A refused connection is the channel's fault, not the event's: it spends no attempt
# (tests/integration/test_channel_failures.py, tests/integration/test_relay_breaker.py).
@pytest.mark.parametrize("fault", ["HTTP 503", "timeout"])
def test_retryable_faults_back_off_then_fail_after_max_attempts(
    db: firestore.Client, settings: Settings, receiver: Receiver, fault: str
) -> None:
    url = receiver.url + "?token=s3cret-in-url"
    if fault == "HTTP 503":
        receiver.respond = lambda _: Answer(503)
    else:
        receiver.respond = _slow
    [event_id] = add_orders(db, settings, 1)
    base, cap = 0.5, 1.0
    relay = make_relay(
        db, settings, url, max_attempts=3, backoff_base_seconds=base, backoff_max_seconds=cap
    )

    first = relay.run()
    event = outbox(db, settings)[event_id]
    assert first["retried"] == 1 and (event["status"], event["attempts"]) == ("PENDING", 1)
    # Between the base and the cap, measured from the settle's commit time. The relay picks
    # nextAttemptAt on Firestore's clock just before that write, so on a loaded machine the
    # commit lands a little later: allow 0.3 s of write latency and clock uncertainty.
    delay = (event["nextAttemptAt"] - event["updatedAt"]).total_seconds()
    assert base - 0.3 <= delay <= cap + 0.3

    run_until(relay, lambda: outbox(db, settings)[event_id]["status"] == "FAILED")
    event = outbox(db, settings)[event_id]
    assert event["attempts"] == 3
    assert event["lastError"].startswith("gave up after attempt 3")
    expected = {"HTTP 503": "HTTP 503", "timeout": "Timeout"}
    assert expected[fault] in event["lastError"]
    assert "s3cret" not in event["lastError"]
    assert [r.event_id for r in receiver.received] == [event_id] * 3


def test_retry_after_is_honoured_up_to_the_cap(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    answers = {"polite": "2", "greedy": "3600"}
    receiver.respond = lambda r: Answer(429, (("Retry-After", answers[r.json()["orderId"]]),))
    for name in answers:
        add_raw_event(db, settings, name, payload={"orderId": name})
    relay = make_relay(db, settings, receiver.url, backoff_base_seconds=0.1, backoff_max_seconds=5)

    assert relay.run()["retried"] == 2
    events = outbox(db, settings)
    polite, greedy = (
        (events[name]["nextAttemptAt"] - events[name]["updatedAt"]).total_seconds()
        for name in answers
    )
    # nextAttemptAt counts from Firestore's time when the settle was planned; updatedAt is
    # its commit time, which comes after (later still when settles queue up under load).
    assert 2 - 0.25 <= polite <= 5.05
    assert 5 - 0.05 <= greedy <= 5.05
    assert relay.run()["leased"] == 0  # nothing is due again before its time


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


def test_timestamps_bytes_geopoints_and_references_in_a_payload_are_encoded(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=dt.timezone.utc)
    payload = {
        "at": moment,
        "blob": b"\x00\xff",
        "where": firestore.GeoPoint(52.5, 13.4),
        "customer": db.collection("customers").document("c1"),
        "nested": [{"at": moment}],
    }
    add_raw_event(db, settings, "rich", payload=payload)

    assert make_relay(db, settings, receiver.url).run()["processed"] == 1
    assert receiver.received[0].json() == {
        "at": "2026-01-02T03:04:05.678000Z",
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "where": {"latitude": 52.5, "longitude": 13.4},
        "customer": "customers/c1",
        "nested": [{"at": "2026-01-02T03:04:05.678000Z"}],
    }


def test_an_abandoned_lease_is_taken_back_and_counts_as_an_attempt(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    long_ago = utcnow() - dt.timedelta(hours=1)
    held = {"status": "PROCESSING", "updatedAt": long_ago, "processingInstanceId": "dead-relay"}
    add_raw_event(db, settings, "abandoned", attempts=1, **held)
    add_raw_event(db, settings, "exhausted", attempts=3, **held)  # max_attempts is 3
    add_raw_event(db, settings, "fresh", attempts=1, **{**held, "updatedAt": utcnow()})

    # Per-event leases write the takeover; partition leases: test_partition_order.py.
    summary = make_relay(db, settings, receiver.url, max_attempts=3, leases="event").run()

    assert (summary["reclaimed"], summary["processed"], summary["failed"]) == (2, 1, 1)
    assert [r.event_id for r in receiver.received] == ["abandoned"]
    events = outbox(db, settings)
    assert (events["abandoned"]["status"], events["abandoned"]["attempts"]) == ("PROCESSED", 2)
    assert "lease by dead-relay abandoned during attempt 1" in events["abandoned"]["lastError"]
    assert (events["exhausted"]["status"], events["exhausted"]["attempts"]) == ("FAILED", 3)
    assert "abandoned during attempt 3" in events["exhausted"]["lastError"]
    assert events["fresh"]["status"] == "PROCESSING"  # its lease still runs: not touched


def test_only_one_of_two_writers_holding_the_same_snapshot_gets_the_lease(
    db: firestore.Client, settings: Settings
) -> None:
    add_raw_event(db, settings, "e1")
    store = LeaseStore(db, settings.outbox_collection, timeout=5)
    [snapshot] = store.pending(utcnow(), 10)

    def lease(instance: str) -> dt.datetime | None:
        change = Change(
            snapshot.reference, snapshot.update_time, {"processingInstanceId": instance}
        )
        [result] = store.write_if_unchanged([change])
        return result

    assert lease("relay-a") is not None
    assert lease("relay-b") is None
    assert outbox(db, settings)["e1"]["processingInstanceId"] == "relay-a"


def test_a_settle_after_the_lease_was_taken_back_is_refused_and_logged(
    db: firestore.Client, settings: Settings, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    [event_id] = add_orders(db, settings, 1)
    ref = db.collection(settings.outbox_collection).document(event_id)

    def taken_back_meanwhile(_: Received) -> Answer:
        ref.update({"processingInstanceId": "relay-b", "updatedAt": firestore.SERVER_TIMESTAMP})
        return Answer(200)

    receiver.respond = taken_back_meanwhile
    # A lease by its own write; with partition leases: test_partition_leases.py.
    with caplog.at_level(logging.WARNING):
        summary = make_relay(db, settings, receiver.url, leases="event").run()

    assert (summary["lostLeases"], summary["processed"]) == (1, 0)
    event = outbox(db, settings)[event_id]
    assert (event["status"], event["processingInstanceId"]) == ("PROCESSING", "relay-b")
    assert f"lost the lease on event {event_id}" in caplog.text


def test_a_run_out_of_time_leaves_nothing_in_processing(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    def slowish(_: Received) -> Answer:
        time.sleep(0.1)
        return Answer(200)

    receiver.respond = slowish
    event_ids = add_orders(db, settings, 60)
    relay = make_relay(db, settings, receiver.url, batch_size=20, concurrency=1)

    summary = relay.run(time_budget=2.5)  # attempts need 1.5 s of it: about 1 s of publishing

    assert summary["stoppedBy"] == "budget"
    events = outbox(db, settings)
    statuses = [event["status"] for event in events.values()]
    assert 0 < statuses.count("PROCESSED") == summary["processed"] < 60
    assert statuses.count("PENDING") == 60 - summary["processed"]
    assert summary["released"] > 0
    assert all(e["attempts"] == 0 for e in events.values() if e["status"] == "PENDING")
    delivered = [r.event_id for r in receiver.received]
    assert len(delivered) == len(set(delivered)) == summary["processed"]
    assert set(delivered) <= set(event_ids)


def test_a_summary_reports_lag_and_counts(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_raw_event(db, settings, "late", nextAttemptAt=utcnow() - dt.timedelta(seconds=30))
    summary = make_relay(db, settings, receiver.url).run()
    assert summary["lagMs"] >= 30_000
    assert json.loads(json.dumps(summary)) == summary  # loggable as one JSON line
