"""`OrderCounter`: the reference downstream consumer, counting orders per customer.

It reads the request once (`firestore_outbox.consumer.events`: one mode, ambiguity refused),
verifies that reading, builds a `cloudevents` SDK event from exactly what was verified, deduplicates
through the inbox and answers as the relay's wire table expects: 2xx for an applied, duplicate or
ignored event, 4xx (the relay gives up at once) for a bad signature, a malformed or poison event and
a parked one, 503/500 (the relay retries) when it could not finish. docs/consuming.md's "The
reference receiver" has the full table.

Its effect is `orders` incremented by one in `RECEIVER_COUNTS_COLLECTION/{customerId}`. Its
settings are `firestore_outbox.consumer.ReceiverConfig`; reading a delivery and forming
answers, `read_delivery`, `to_cloudevent`, `refused_answer` and `json_answer` of the same module:
it uses only the library's public names, as a consumer of your own would.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from firestore_outbox.consumer import (
    DeliveryRefused,
    Inbox,
    Received,
    ReceivedEvent,
    ReceiverAnswer,
    ReceiverConfig,
    Verdict,
    json_answer,
    log_event,
    process_span,
    read_delivery,
    record_answer,
    record_consumed,
    refused_answer,
    to_cloudevent,
)
from firestore_outbox.producer import checked_id

if TYPE_CHECKING:
    from google.cloud.firestore import Client, WriteBatch

__all__ = ["OrderCounter"]

logger = logging.getLogger(__name__)


class OrderCounter:
    """A `Receiver` responder: `Receiver(OrderCounter(db, config))` serves it over HTTP."""

    def __init__(self, db: Client, config: ReceiverConfig) -> None:
        self._config = config
        self._counts = db.collection(config.counts_collection)
        self.inbox = Inbox(
            db,
            config.consumer,
            collection=config.inbox_collection,
            timeout=config.firestore_timeout_seconds,
        )

    def __call__(self, request: Received) -> ReceiverAnswer:
        try:
            received = read_delivery(request, self._config)
        except DeliveryRefused as refused:
            return self._counted(refused_answer(refused))
        # The relay's publish span continues here: one trace from the commit to the count.
        with process_span(
            received.trace, consumer=self._config.consumer, event_id=received.attributes.get("id")
        ) as span:
            answer = self._apply(received)
            record_answer(span, answer.status)
        return self._counted(answer)

    def _counted(self, answer: ReceiverAnswer) -> ReceiverAnswer:
        # Every answer is `json_answer`'s JSON: its `status` is the verdict (or why not).
        record_consumed(self._config.consumer, json.loads(answer.body)["status"])
        return answer

    def _apply(self, received: ReceivedEvent) -> ReceiverAnswer:
        try:
            event = to_cloudevent(received)
            customer = _customer_of(event) if event.get_type() == "OrderCreated" else None
            if customer is None:
                return json_answer(200, "ignored", event.get_id())
            # Counting only writes: the batch path, which locks nothing a killed receiver
            # could leave locked for a minute (`firestore_outbox.consumer.inbox.batched`).
            result = self.inbox.process_in_batch(
                event.get_source(), event.get_id(), lambda batch: self._count(batch, customer)
            )
        except DeliveryRefused as refused:
            return refused_answer(refused)
        except google_exceptions.GoogleAPIError as exc:
            log_event(logger, logging.ERROR, "receiver.firestore", f"Firestore failed: {exc}")
            return json_answer(503, "unavailable", None, "Firestore unavailable", retry_after=1)
        except Exception as exc:  # a retry may succeed; the relay's attempts bound it
            log_event(logger, logging.ERROR, "receiver.failed", "delivery failed", exc_info=True)
            return json_answer(500, "failed", None, f"{type(exc).__name__}: {exc}")
        verdict, event_id = result.verdict, event.get_id()
        log_event(
            logger,
            logging.INFO,
            "receiver.delivery",
            f"event {event_id}: {verdict.value}",
            eventId=event_id,
            verdict=verdict.value,
            attempts=result.attempts,
        )
        if verdict is Verdict.IN_PROGRESS:
            return json_answer(503, verdict.value, event_id, retry_after=result.retry_after or 1)
        if verdict is Verdict.PARKED:
            return json_answer(422, verdict.value, event_id)
        return json_answer(200, verdict.value, event_id)

    def _count(self, batch: WriteBatch, customer: str) -> None:
        fields = {
            "customerId": customer,
            "orders": firestore.Increment(1),
            "updatedAt": firestore.SERVER_TIMESTAMP,
        }
        batch.set(self._counts.document(customer), fields, merge=True)


def _customer_of(event: Any) -> str:
    data = event.get_data()
    customer = data.get("customerId") if isinstance(data, dict) else None
    if not isinstance(customer, str):
        raise DeliveryRefused(422, "OrderCreated without a usable customerId")
    try:
        return checked_id(customer, "customerId")
    except ValueError:
        raise DeliveryRefused(422, "OrderCreated without a usable customerId") from None
