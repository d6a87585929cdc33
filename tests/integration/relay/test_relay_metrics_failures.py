"""The relay's counters for what is not a delivery, after a known scenario, read with the SDK's
in-memory metric reader: poison events, a lost lease, a run stopped by a broken channel. Real
emulator and real local HTTP downstreams."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay import Relay
from tests.support.helpers import (
    add_orders,
    add_raw_event,
    fast_config,
    lease_taken_back_while_delivering,
    make_relay,
)
from tests.support.otel import metric_points, metric_reader

COUNTERS = ("outbox.events.processed", "outbox.events.failed", "outbox.events.poisoned")


def gained(before: dict[str, dict[Any, Any]], name: str) -> dict[frozenset[Any], Any]:
    """What metric `name` gained since `before`, by attributes."""
    old = before.get(name, {})
    return {k: v - old.get(k, 0) for k, v in metric_points(name).items() if v != old.get(k, 0)}


def snapshot(*names: str) -> dict[str, dict[Any, Any]]:
    return {name: metric_points(name) for name in names}


def test_poison_events_are_counted_as_poisoned_and_failed(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    metric_reader()
    add_orders(db, settings, 2)
    add_raw_event(db, settings, "no-type", eventType=None)
    before = snapshot(*COUNTERS)

    summary = make_relay(db, settings, receiver.url).run()

    assert (summary["processed"], summary["poisoned"], summary["failed"]) == (2, 1, 1)
    assert gained(before, "outbox.events.processed") == {frozenset(): 2}
    assert gained(before, "outbox.events.poisoned") == {frozenset(): 1}
    assert gained(before, "outbox.events.failed") == {frozenset(): 1}


def test_a_settle_refused_because_the_lease_moved_on_is_a_lost_lease(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    metric_reader()
    lease_taken_back_while_delivering(db, settings, receiver)
    before = snapshot("outbox.leases.lost", "outbox.events.processed")
    summary = make_relay(db, settings, receiver.url, leases="event").run()

    assert (summary["lostLeases"], summary["processed"]) == (1, 0)
    assert gained(before, "outbox.leases.lost") == {frozenset(): 1}
    assert gained(before, "outbox.events.processed") == {}


def test_a_run_stopped_by_a_broken_channel_counts_one_break_by_its_error(
    db: firestore.Client, settings: Settings
) -> None:
    metric_reader()
    add_orders(db, settings, 4)
    before = snapshot("outbox.channel.breaks")
    with Receiver(lambda _: ReceiverAnswer(401, body=b"bad signature")) as downstream:
        relay = Relay(db, settings, fast_config(downstream.url, concurrency=1))
        summary = relay.run()

    assert (summary["stoppedBy"], summary["channel"]) == ("channel", "HTTP 401")
    assert gained(before, "outbox.channel.breaks") == {frozenset({("error.type", "HTTP 401")}): 1}
