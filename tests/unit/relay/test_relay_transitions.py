"""What each step of an event's life writes, decided without Firestore."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

from google.cloud.firestore import DELETE_FIELD, SERVER_TIMESTAMP

from firestore_outbox.publishers.base import Outcome, PublishResult
from firestore_outbox.relay.transitions import (
    MAX_INSTANCE_ID_LENGTH,
    MAX_PARKED_REASON_LENGTH,
    bounded_instance_id,
    expiry,
    parked,
    plan_lease,
    requeue,
    settlement,
)
from tests.support.helpers import FAST, NOW, document


def test_a_pending_event_is_leased_and_its_attempt_counted_up_front() -> None:
    plan = plan_lease("e-1", document(status="PENDING"), instance="i-1", max_attempts=3)
    assert (plan.kind, plan.reclaim) == ("leased", False)
    assert plan.fields == {
        "status": "PROCESSING",
        "processingInstanceId": "i-1",
        "attempts": 3,
        "updatedAt": SERVER_TIMESTAMP,
    }


def test_an_abandoned_lease_is_taken_back_or_failed_when_no_attempt_is_left() -> None:
    held = document(status="PROCESSING", processingInstanceId="dead", attempts=1)
    plan = plan_lease("e-1", held, instance="i-2", max_attempts=3)
    assert (plan.kind, plan.reclaim, plan.fields["attempts"]) == ("leased", True, 2)
    assert plan.fields["lastError"] == "lease by dead abandoned during attempt 1"

    spent = plan_lease("e-1", {**held, "attempts": 3}, instance="i-2", max_attempts=3)
    assert (spent.kind, spent.fields["status"]) == ("exhausted", "FAILED")
    assert "attempts" not in spent.fields


def test_a_poison_document_is_failed_with_its_reason() -> None:
    plan = plan_lease("e-1", document(payload="x"), instance="i-1", max_attempts=3)
    assert (plan.kind, plan.event, plan.fields["status"]) == ("poisoned", None, "FAILED")
    assert plan.fields["lastError"] == "poison event: payload must be a map, got str"


def test_settlements() -> None:
    rng = random.Random(3)

    def settle(attempt: int, result: PublishResult | None) -> tuple[str, dict[str, object]]:
        return settlement(attempt, result, FAST, now=NOW, rng=rng)

    kind, fields = settle(1, PublishResult.delivered())
    assert kind == "processed" and fields["processedAt"] is SERVER_TIMESTAMP
    assert fields["expireAt"] == NOW + dt.timedelta(seconds=FAST.retention_seconds)
    keep = dataclasses.replace(FAST, retention_seconds=0)
    kind, fields = settlement(1, PublishResult.delivered(), keep, now=NOW)
    assert kind == "processed" and "expireAt" not in fields

    kind, fields = settle(1, PublishResult(Outcome.RETRY, "HTTP 503"))
    assert (kind, fields["status"], fields["lastError"]) == (
        "retried",
        "PENDING",
        "attempt 1: HTTP 503",
    )
    assert (
        NOW + dt.timedelta(seconds=0.05)
        <= fields["nextAttemptAt"]
        <= NOW + dt.timedelta(seconds=0.2)
    )

    kind, fields = settle(3, PublishResult(Outcome.RETRY, "HTTP 503"))  # FAST allows 3
    assert (kind, fields["lastError"]) == ("failed", "gave up after attempt 3: HTTP 503")

    kind, fields = settle(1, PublishResult(Outcome.REJECTED, "HTTP 400"))
    assert (kind, fields["lastError"]) == ("failed", "rejected after attempt 1: HTTP 400")

    kind, fields = settle(2, None)  # never sent: the attempt is handed back, due at once
    assert (kind, fields["status"], fields["attempts"], fields["nextAttemptAt"]) == (
        "released",
        "PENDING",
        1,
        SERVER_TIMESTAMP,  # Firestore's own "now", not the relay's
    )

    kind, fields = settle(2, PublishResult(Outcome.CHANNEL, "HTTP 401"))  # the channel broke
    assert (kind, fields["status"], fields["attempts"], fields["lastError"]) == (
        "released",
        "PENDING",
        1,
        "channel: HTTP 401",
    )


def test_a_parked_write_only_shrinks_the_document() -> None:
    fields = parked("INVALID_ARGUMENT: " + "maximum entity size is 1048576 bytes " * 20)
    assert fields["status"] == "FAILED" and fields["updatedAt"] is SERVER_TIMESTAMP
    assert fields["lastError"].startswith("write refused by Firestore: INVALID_ARGUMENT: max")
    assert len(fields["lastError"]) <= MAX_PARKED_REASON_LENGTH
    assert set(parked(None)) == {"status", "updatedAt"}


def test_the_instance_id_is_bounded_like_last_error() -> None:
    plan = plan_lease("e-1", document(), instance="i" * 5000 + "\n", max_attempts=5)
    assert len(plan.fields["processingInstanceId"]) == MAX_INSTANCE_ID_LENGTH
    assert bounded_instance_id("fc-request\n  42") == "fc-request 42"


def test_whole_number_doubles_are_accepted_as_attempts_and_healed_to_ints() -> None:
    plan = plan_lease("e-1", document(attempts=0.0), instance="i", max_attempts=5)
    assert plan.kind == "leased" and plan.fields["attempts"] == 1
    assert type(plan.fields["attempts"]) is int
    for bad in (0.5, -1.0, True, "1", None, float("nan")):
        assert plan_lease("e-1", document(attempts=bad), instance="i", max_attempts=5).kind == (
            "poisoned"
        ), bad


def test_a_requeue_makes_a_failed_event_due_with_every_attempt_back() -> None:
    fields = requeue()
    assert (fields["status"], fields["attempts"]) == ("PENDING", 0)
    assert fields["nextAttemptAt"] is SERVER_TIMESTAMP and fields["updatedAt"] is SERVER_TIMESTAMP
    assert fields["expireAt"] is DELETE_FIELD  # a requeued event must not expire
    assert "lastError" not in fields  # kept: why it had failed


def test_expiry_is_the_settle_time_plus_the_retention_or_never() -> None:
    assert expiry(NOW, 3600) == NOW + dt.timedelta(hours=1)
    assert expiry(NOW, 0) is None
