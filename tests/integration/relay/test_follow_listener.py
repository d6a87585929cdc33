"""Follow mode's listener on the emulator, in process: a stream that ends for good and one
that stalls without a word. Both failures are injected into the real `Watch` the follower
subscribed (its gRPC call is cancelled, as a server ending the stream would; its snapshot
callback is cut off): the client library and the emulator are real throughout."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.follow.follower import Follower
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox


@contextmanager
def following(
    db: firestore.Client, settings: Settings, url: str, **overrides: Any
) -> Iterator[tuple[list[Any], dict[str, Any]]]:
    """A follower on a thread; yields the Watch objects it subscribed and, once the block
    is left, its summary. The listener's health watch belongs to follow mode with per-event
    leases (`firestore_outbox.relay.follow.partitioned` only wakes on its listener and polls)."""
    relay = make_relay(db, settings, url, **{"leases": "event", **overrides})
    watches: list[Any] = []
    subscribe = relay.store.watch_pending

    def recording(limit: int, on_change: Callable[[Any], None], **how: Any) -> Any:
        watches.append(subscribe(limit, on_change, **how))
        return watches[-1]

    relay.store.watch_pending = recording  # type: ignore[method-assign]
    follower = Follower(relay)
    summary: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: summary.update(follower.run()))
    thread.start()
    try:
        yield watches, summary
    finally:
        follower.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


def listening(watches: list[Any]) -> None:
    """Wait until the first subscription delivered its first snapshot (the listener is up)."""
    for _ in range(300):
        if watches and watches[0].has_pushed:
            return
        threading.Event().wait(0.1)
    raise AssertionError("the listener never came up")


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "structured", {}).get("event") == name]


def assert_later_downs_are_failed_resubscriptions(again: list[logging.LogRecord]) -> None:
    """The outage is reported once; later reports may only be the listener's own failures.
    On the emulator, calls made just after a listen stream was cancelled sometimes fail (499
    `call already cancelled`) or go unanswered: a resubscription then ends at once (`stream
    ended`) or never gets its first snapshot (`no first snapshot`), and the listener
    subscribes again, as designed (4 in about 250 stress runs). A poll's failure while the listener
    is down is no listener report (it was, as `Firestore error`, in 2 of 60 runs)."""
    reasons = [r.structured["reason"] for r in again]  # type: ignore[attr-defined]
    assert set(reasons) <= {"stream ended", "no first snapshot"}, reasons


def count_up_then_ended(again: list[logging.LogRecord]) -> int:
    """Later reports that began an outage of their own: the emulator ended a resubscription
    after its first snapshot (1 of 70 stress runs). Each outage is counted once."""
    return sum(r.structured["failuresInARow"] == 1 for r in again)  # type: ignore[attr-defined]


def live(watch: Any) -> bool:
    return bool(watch.is_active and watch.has_pushed)


def end_the_stream_and_deliver_around_it(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
    watches: list[Any],
) -> None:
    """Once the listener is up: one event delivered, the stream cancelled for good, one
    event that must still be delivered, the resubscription, and one more event for it."""
    listening(watches)
    [first] = add_orders(db, settings, 1)
    assert [r.event_id for r in receiver.wait_for(1, timeout=20)] == [first]
    watches[0]._rpc.call.cancel()  # the stream ends with CANCELLED: Watch does not recover
    second = set(add_orders(db, settings, 1)) - {first}
    delivered = receiver.wait_for(2, timeout=20)
    assert {r.event_id for r in delivered} == {first, *second}, "blind after the stream ended"
    for _ in range(300):  # a new subscription up (one the emulator ends is replaced)
        if events(caplog, "relay.listener_resubscribed") and live(watches[-1]):
            break
        threading.Event().wait(0.1)
    assert events(caplog, "relay.listener_resubscribed")
    assert len(watches) >= 2 and live(watches[-1])
    third = set(add_orders(db, settings, 1)) - {first, *second}
    delivered = receiver.wait_for(3, timeout=20)  # by the new listener: nothing polls now
    assert {r.event_id for r in delivered} == {first, *second, *third}


def test_a_listener_stream_closed_for_good_is_reported_polled_around_and_resubscribed(
    db: firestore.Client, settings: Settings, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    # No periodic re-read during the test: only the listener or the outage polling deliver.
    with following(db, settings, receiver.url, follow_poll_seconds=3600.0) as (watches, summary):
        end_the_stream_and_deliver_around_it(db, settings, receiver, caplog, watches)
    down, *again = events(caplog, "relay.listener_down")
    assert down.structured["reason"] == "stream ended"  # type: ignore[attr-defined]
    assert_later_downs_are_failed_resubscriptions(again)
    # The error is named when the client reports it: when its consumer thread, not gRPC's
    # callback, finalizes the stream first, the Watch closes with no reason at all.
    assert down.structured["errorClass"] in ("Cancelled", None)  # type: ignore[attr-defined]
    assert events(caplog, "relay.listener_polling")
    # One outage, unless the emulator ended a resubscription that was up (see above).
    assert (
        summary["listenerDown"] == 1 + count_up_then_ended(again) and summary["resubscribed"] >= 1
    )
    assert summary["polls"] >= 1 and summary["processed"] == 3
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


@pytest.mark.parametrize("leases", ["event", "partition"])
def test_a_listener_that_stalls_silently_is_covered_by_the_periodic_re_read(
    db: firestore.Client, settings: Settings, receiver: Receiver, leases: str
) -> None:
    with following(db, settings, receiver.url, leases=leases, follow_poll_seconds=1.0) as (
        watches,
        summary,
    ):
        listening(watches)
        [first] = add_orders(db, settings, 1)
        assert [r.event_id for r in receiver.wait_for(1, timeout=20)] == [first]
        # The stream stays open and healthy-looking; its snapshots just never arrive.
        watches[0]._snapshot_callback = lambda *_: None
        later = set(add_orders(db, settings, 2)) - {first}
        delivered = receiver.wait_for(3, timeout=20)
        assert {r.event_id for r in delivered} == {first, *later}
    # Per-event follow mode re-reads with its due query; partitioned runs the drain again
    # (its first run counted too).
    assert summary["rereads"] >= 1 if leases == "event" else summary["runs"] >= 2
    assert summary["processed"] == 3
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_follow_mode_delivers_an_event_without_a_timestamp_next_attempt_at(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # Another producer's event with no nextAttemptAt field at all: the window, a query
    # ordered by that field, can never show it. (Written in two steps so that it is never
    # PENDING with the field.)
    with following(db, settings, receiver.url, follow_poll_seconds=1.0) as (watches, summary):
        listening(watches)
        add_raw_event(db, settings, "foreign", status="DRAFT")
        foreign = db.collection(settings.outbox_collection).document("foreign")
        foreign.update({"nextAttemptAt": firestore.DELETE_FIELD, "status": "PENDING"})
        assert [r.event_id for r in receiver.wait_for(1, timeout=20)] == ["foreign"]
    assert summary["unscheduled"] >= 1
    assert outbox(db, settings)["foreign"]["status"] == "PROCESSED"
