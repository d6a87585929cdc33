"""Writes Firestore refuses and settles that fail for a while: each event is settled by its
own outcome, on the real emulator."""

from __future__ import annotations

import threading
import time
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.support.faults import faulty_client
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox


def add_event_near_the_limit(
    db: firestore.Client, settings: Settings, event_id: str, headroom: int
) -> None:
    """An event whose document is `headroom` bytes short of the largest Firestore accepts
    (found by trying: the emulator's own size accounting decides)."""
    low, high = 0, 1 << 20
    while high - low > 1:  # the largest filler the emulator accepts
        middle = (low + high) // 2
        try:
            add_raw_event(db, settings, event_id, payload={"filler": "x" * middle})
            low = middle
        except google_exceptions.InvalidArgument:
            high = middle
    add_raw_event(db, settings, event_id, payload={"filler": "x" * (low - headroom)})


def test_a_lease_firestore_refuses_parks_only_its_event_and_the_run_goes_on(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    event_ids = add_orders(db, settings, 3)
    # 110 bytes short of the limit: a lease naming a 128-character instance does not fit;
    # FAILED with a short reason does.
    add_event_near_the_limit(db, settings, "huge", headroom=110)
    relay = make_relay(db, settings, receiver.url, leases="event")  # partition leases write none

    summary = relay.run(instance_id="fc-request-" + "7" * 200)
    again = relay.run()

    events = outbox(db, settings)
    assert summary["status"] == "ok", summary
    assert (summary["refused"], summary["processed"]) == (1, 3)
    assert {events[e]["status"] for e in event_ids} == {"PROCESSED"}
    assert events["huge"]["status"] == "FAILED"
    assert events["huge"]["lastError"].startswith("write refused by Firestore: INVALID_ARGUMENT")
    assert (again["status"], again["leased"], again["refused"]) == ("ok", 0, 0)
    assert sorted(r.event_id for r in receiver.received) == event_ids  # huge never sent


def test_a_settle_firestore_refuses_parks_only_its_event(
    db: firestore.Client, settings: Settings
) -> None:
    event_ids = add_orders(db, settings, 3)
    # Room for the lease, not for a retry's 500-character lastError.
    add_event_near_the_limit(db, settings, "huge", headroom=200)

    def answer(request: Received) -> ReceiverAnswer:
        if request.event_id == "huge":
            return ReceiverAnswer(503, body=b"busy " * 200)
        return ReceiverAnswer(200)

    with Receiver(answer) as downstream:
        summary = make_relay(db, settings, downstream.url, batch_size=10).run()

    events = outbox(db, settings)
    assert summary["status"] == "ok", summary
    assert (summary["refused"], summary["processed"]) == (1, 3)
    assert {events[e]["status"] for e in event_ids} == {"PROCESSED"}
    assert (events["huge"]["status"], events["huge"]["attempts"]) == ("FAILED", 1)
    assert events["huge"]["lastError"].startswith("write refused by Firestore:")


def test_settles_that_fail_for_a_while_are_retried_until_they_land(
    pausable_emulator: FirestoreEmulator,
) -> None:
    emulator = pausable_emulator
    settings = Settings(project_id="outbox-settle-retry", emulator_host=emulator.host_port)
    db = get_db_client(settings)
    event_ids = add_orders(db, settings, 10)
    frozen: list[Any] = []

    def freeze_on_the_last(request: Received) -> ReceiverAnswer:
        if len(downstream.received) == len(event_ids) and not frozen:
            # The relay found nothing more to lease long ago (the batch had room for
            # more); now Firestore is unreachable for 3 s: the last settle times out
            # (1 s a try) and must be tried again.
            time.sleep(0.5)
            emulator.pause()
            frozen.append(threading.Timer(3.0, emulator.resume))
            frozen[0].start()
        return ReceiverAnswer(200)

    with Receiver(freeze_on_the_last) as downstream:
        relay = make_relay(
            db,
            settings,
            downstream.url,
            batch_size=50,
            concurrency=1,
            firestore_timeout_seconds=1.0,
            time_budget_seconds=20.0,
            http_timeout_seconds=2.0,  # the frozen downstream answer is no timeout
            lock_timeout_seconds=10.0,
        )
        try:
            summary = relay.run()
        finally:
            for timer in frozen:  # not left to thaw the emulator in another test's freeze
                timer.cancel()
            emulator.resume()
    events = outbox(db, settings)

    assert frozen, "the emulator was never frozen"
    assert summary["status"] == "ok", summary
    assert {events[e]["status"] for e in event_ids} == {"PROCESSED"}
    assert summary["processed"] == 10, summary  # a settle that landed unseen is read back


# CANCELLED: the emulator answers a call made just after a listen stream was cancelled so
# ("call already cancelled. Use ServerCallStreamObserver.setOnCancelHandler() ..."), the
# write landed or not; follow mode met it after its listener's stream ended.
@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED])
def test_a_settle_that_landed_but_whose_answer_was_lost_counts_as_processed(
    db: firestore.Client, settings: Settings, code: grpc.StatusCode
) -> None:
    event_ids = add_orders(db, settings, 3)
    client, faults = faulty_client(settings)

    armed = threading.Lock()

    def lose_the_settles_answer(request: Received) -> ReceiverAnswer:
        # Every event is leased by now: the next BatchWrite is a settle. It lands, then the
        # client's retry layer (UNAVAILABLE) or the settler (CANCELLED) sends it again, which
        # finds it written. Armed once: later answers may come before that settle is sent.
        if armed.acquire(blocking=False):
            faults.fail("BatchWrite", code, after_call=True)
        return ReceiverAnswer(200)

    with Receiver(lose_the_settles_answer) as downstream:
        relay = make_relay(client, settings, downstream.url, batch_size=50, concurrency=1)
        summary = relay.run()

    events = outbox(db, settings)
    assert faults.injected == 1
    assert summary["status"] == "ok", summary
    assert {events[e]["status"] for e in event_ids} == {"PROCESSED"}
    assert (summary["processed"], summary.get("lostLeases", 0)) == (3, 0), summary
