"""`firestore_outbox.ops` on the emulator: the conditional writes under the operations commands."""

from __future__ import annotations

from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import plan_requeue, read_status, requeue
from tests.support.helpers import add_raw_event, outbox, utcnow


def test_a_requeue_leaves_alone_an_event_changed_since_it_was_read(
    db: firestore.Client, settings: Settings
) -> None:
    for event_id in ("a", "b"):
        add_raw_event(db, settings, event_id, status="FAILED", attempts=5, lastError="gave up")
    plan = plan_requeue(db, settings.outbox_collection, event_ids=["a", "b"])
    assert plan.matched == 2
    # Meanwhile another operator requeued "a" and a relay leased it.
    db.collection(settings.outbox_collection).document("a").update(
        {"status": "PROCESSING", "attempts": 1, "processingInstanceId": "relay-2"}
    )

    done, changed = requeue(db, settings.outbox_collection, plan)

    assert (done, changed) == (1, 1)
    events = outbox(db, settings)
    assert (events["a"]["status"], events["a"]["processingInstanceId"]) == ("PROCESSING", "relay-2")
    assert (events["b"]["status"], events["b"]["attempts"]) == ("PENDING", 0)


def test_requeue_pages_through_more_events_than_one_batch(
    db: firestore.Client, settings: Settings
) -> None:
    batch = db.batch()
    for n in range(620):
        ref = db.collection(settings.outbox_collection).document(f"e-{n:04d}")
        batch.set(ref, {"eventId": ref.id, "status": "FAILED", "attempts": 5, "eventType": "X"})
        if n % 300 == 299:
            batch.commit()
            batch = db.batch()
    batch.commit()
    pages: list[int] = []

    plan = plan_requeue(db, settings.outbox_collection, event_type="X")
    done, changed = requeue(db, settings.outbox_collection, plan, on_page=pages.append)

    assert (plan.matched, done, changed, pages) == (620, 620, 0, [500, 120])
    assert {e["status"] for e in outbox(db, settings).values()} == {"PENDING"}


def test_status_groups_at_most_max_failures(db: firestore.Client, settings: Settings) -> None:
    for n in range(5):
        add_raw_event(db, settings, f"f-{n}", status="FAILED", lastError=f"error {n % 2}")

    status = read_status(
        db,
        settings.outbox_collection,
        now=utcnow(),
        lock_timeout_seconds=300,
        max_failures=3,
        partitions=16,
    )

    assert status.counts["FAILED"] == 5 and status.failures_read == 3
    assert status.failures == [("error 0", 2), ("error 1", 1)]  # f-0, f-1, f-2 by id
