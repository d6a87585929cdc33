"""The largest event `add` accepts goes through the partitioned relay (the default) itself:
healed or not, retried with the longest `lastError` a downstream can cause, held as a failed
head, then delivered, without a single write Firestore refuses."""

from __future__ import annotations

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops.requeue import plan_requeue, requeue
from firestore_outbox.publishers.base import MAX_ERROR_LENGTH
from tests.integration.producer.test_outbox_headroom import EVENT_ID, largest_accepted, queue
from tests.support.helpers import make_relay, outbox, run_until

WIDEST = "\U0001f4a5"  # four bytes of UTF-8 a character: the widest `lastError` there is


def test_the_largest_event_accepted_is_retried_held_and_delivered_by_the_partitioned_relay(
    db: firestore.Client, settings: Settings
) -> None:
    queue(db, settings, largest_accepted(db, settings)).commit()
    wide = (WIDEST * 2000).encode()
    answers = [ReceiverAnswer(503, body=wide), ReceiverAnswer(422, body=wide), ReceiverAnswer(200)]

    def downstream(_: Received) -> ReceiverAnswer:
        return answers.pop(0) if len(answers) > 1 else answers[0]

    with Receiver(downstream) as receiver:
        relay = make_relay(db, settings, receiver.url, max_attempts=5)
        assert relay.config.partitions.leases == "partition"
        summaries = run_until(
            relay, lambda: outbox(db, settings)[EVENT_ID]["status"] == "FAILED", timeout=30
        )
        failed = outbox(db, settings)[EVENT_ID]
        # A failed head holds its aggregate; requeued (`outbox requeue`), it is delivered.
        plan = plan_requeue(db, settings.outbox_collection, event_ids=[EVENT_ID])
        assert requeue(db, settings.outbox_collection, plan) == (1, 0)
        summaries += run_until(
            relay,
            lambda: outbox(db, settings)[EVENT_ID]["status"] == "PROCESSED",
            timeout=30,
        )

    assert sum(s["refused"] for s in summaries) == 0, summaries
    assert all(s["status"] == "ok" for s in summaries), summaries
    assert failed.get("held") is True, failed
    assert WIDEST in failed["lastError"] and len(failed["lastError"]) <= MAX_ERROR_LENGTH
    assert failed["attempts"] == 2
    assert outbox(db, settings)[EVENT_ID]["attempts"] == 1  # requeued: attempts start afresh
