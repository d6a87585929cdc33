"""The inbox's surface on the real emulator: decorators keyed on the CloudEvent's source and
id, `expireAt` for a TTL policy, bad arguments refused."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.inbox import Inbox, Verdict
from tests.support.inbox_effects import SOURCE, count, counter_effect


def test_records_carry_expire_at_for_a_ttl_policy(db: firestore.Client) -> None:
    inbox = Inbox(db, "mailer", retention=dt.timedelta(days=7))
    inbox.process(SOURCE, "e-1", lambda: "sent")
    expire_at = inbox.get(SOURCE, "e-1").get("expireAt")
    expected = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=7)
    assert abs((expire_at - expected).total_seconds()) < 60


def test_decorators_key_on_the_cloudevent_source_and_id(db: firestore.Client) -> None:
    from cloudevents.core.v1.event import CloudEvent

    inbox = Inbox(db, "order-counter")

    @inbox.idempotent_in_transaction
    def count_order(event: Any, transaction: firestore.Transaction) -> str:
        return str(counter_effect(db, event.get_data()["customerId"])(transaction))

    @Inbox(db, "mailer").idempotent
    def notify(event: Any) -> str:
        return f"mailed about {event['id']}"

    event = CloudEvent(
        {"id": "e-9", "source": SOURCE, "type": "OrderCreated"}, {"customerId": "c-9"}
    )
    assert count_order(event).verdict is Verdict.APPLIED
    assert count_order(event).verdict is Verdict.DUPLICATE
    assert count(db, "c-9") == 1
    mapping = {"id": "e-9", "source": SOURCE}
    assert notify(mapping).value == "mailed about e-9"
    assert notify(mapping).verdict is Verdict.DUPLICATE


def test_bad_arguments_are_refused(db: firestore.Client) -> None:
    with pytest.raises(ValueError, match="consumer name"):
        Inbox(db, " ")
    with pytest.raises(ValueError, match="non-empty source and id"):
        Inbox(db, "c").process("", "e-1", lambda: None)
