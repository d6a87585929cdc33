"""`outbox requeue`: FAILED events back to PENDING, by id, by event type or all; dry runs
write nothing."""

from __future__ import annotations

from typing import Any

from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import outbox, utcnow
from tests.support.operator_commands import Run, prepared_outbox, run_outbox, update_times  # noqa: F401  (fixtures)


def test_requeue_dry_run_counts_and_writes_nothing(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = update_times(db, settings)

    code, out, _ = run("requeue", "--all", "--dry-run")

    assert code == 0
    assert out.splitlines() == [
        "3 FAILED events to requeue",
        "eventId  attempts  why: FAILED with lastError",
        "f-422    1         rejected after attempt 1: HTTP 422",
        "f-503a   5         gave up after attempt 5: HTTP 503: busy",
        "f-503b   5         gave up after attempt 5: HTTP 503: busy",
        "dry run: nothing written",
    ]
    # The list is bounded; the count still says how many.
    code, out, _ = run("requeue", "--all", "--dry-run", "--list", "1")
    assert out.splitlines()[2:] == [
        "f-422    1         rejected after attempt 1: HTTP 422",
        "... and 2 more",
        "dry run: nothing written",
    ]
    assert update_times(db, settings) == before


def test_requeue_by_id_resets_only_those_events(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    before = outbox(db, settings)

    code, out, err = run("requeue", "f-503a", "recent", "nope")

    assert code == 0
    assert out.splitlines() == [
        "skipped recent: status is PROCESSED",
        "skipped nope: no such event",
        "1 FAILED events to requeue",
        "requeued 1",
    ]
    assert "requeue [" in err  # the progress bar
    after = outbox(db, settings)
    event = after.pop("f-503a")
    assert (event["status"], event["attempts"], event["requeues"]) == ("PENDING", 0, 1)
    assert event["lastError"] == before["f-503a"]["lastError"]  # why it had failed stays
    assert event["nextAttemptAt"] <= utcnow()  # due at once
    assert after == {k: v for k, v in before.items() if k != "f-503a"}


def test_requeue_by_event_type_and_all(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    code, out, _ = run("requeue", "--event-type", "PaymentTaken")
    assert code == 0 and out.splitlines() == ["1 FAILED events to requeue", "requeued 1"]
    statuses = {k: v["status"] for k, v in outbox(db, settings).items()}
    assert (statuses["f-422"], statuses["f-503a"], statuses["f-503b"]) == (
        "PENDING",
        "FAILED",
        "FAILED",
    )

    code, out, _ = run("requeue", "--all")
    assert code == 0 and out.splitlines() == ["2 FAILED events to requeue", "requeued 2"]
    assert "FAILED" not in {v["status"] for v in outbox(db, settings).values()}
    assert run("requeue", "--all")[1] == "0 FAILED events to requeue\n"


def test_requeue_needs_a_selection(run: Run) -> None:
    code, _, err = run("requeue")
    assert code == 2 and "one of the arguments EVENT_ID --event-type --all is required" in err
