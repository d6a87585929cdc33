"""Follow mode with partition leases (the default) wakes for a new event whatever waits in the
outbox already: its listener's window must change when an event commits."""

from __future__ import annotations

import time

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.firestore.watches import Watches
from firestore_outbox.partitions import HELD, partition_of
from tests.integration.relay.test_follow_listener import following, listening
from tests.support.ordering import add_steps


def test_a_partitioned_follower_wakes_for_a_new_event_behind_fifty_held_ones(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # One aggregate's head FAILED and holding its 50 later events: PENDING, due, never
    # delivered until an operator acts, and each due before anything committed from now on.
    ids = add_steps(db, settings, ["held"] * 51)
    head = db.collection(settings.outbox_collection).document(ids[0])
    head.update({"status": "FAILED", HELD: True})
    # No periodic poll during the test: only the listener wakes the follower.
    with following(db, settings, receiver.url, leases="partition", follow_poll_seconds=3600.0) as (
        watches,
        summary,
    ):
        listening(watches)
        time.sleep(3.0)  # its runs found nothing to deliver (the first snapshot woke it once)
        add_steps(db, settings, ["fresh"])
        committed = time.monotonic()
        received = receiver.wait_for(1, timeout=10)
        waited = time.monotonic() - committed
    assert [r.json() for r in received] == [{"aggregate": "fresh", "seq": 0}], summary
    assert waited < 5, waited
    assert summary["processed"] == 1, summary


def test_with_more_partitions_than_one_query_takes_a_commit_in_the_last_ones_wakes_it(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 40 partitions: a `partition in` filter takes 30, so the listener is two listen streams.
    monkeypatch.setenv("RELAY_PARTITIONS", "40")  # the writers agree with the relay
    late = next(f"fresh-{n}" for n in range(1000) if partition_of(f"fresh-{n}", 40) >= 30)
    with following(
        db,
        settings,
        receiver.url,
        leases="partition",
        partitions=40,
        follow_poll_seconds=3600.0,  # no periodic poll: only the listener wakes the follower
    ) as (watches, summary):
        listening(watches)
        assert isinstance(watches[0], Watches) and len(watches[0].watches) == 2
        add_steps(db, settings, [late])
        received = receiver.wait_for(1, timeout=30)
    assert [r.json() for r in received] == [{"aggregate": late, "seq": 0}], summary
