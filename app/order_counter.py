"""`OrderCounter`: the reference downstream consumer, counting orders per customer.

It reads the request once (`app.signed_events`: one mode, ambiguity refused), verifies that
reading, builds a `cloudevents` SDK event from exactly what was verified, deduplicates
through the inbox and answers as the relay's wire table expects: 2xx for an applied,
duplicate or ignored event, 4xx (the relay gives up at once) for a bad signature, a malformed
or poison event and a parked one, 503/500 (the relay retries) when it could not finish. The
README's "The reference receiver" has the full table.

Its effect is `orders` incremented by one in `RECEIVER_COUNTS_COLLECTION/{customerId}`.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cloudevents.core.v1.event import CloudEvent
from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from app.config import env_reader
from app.consumer_metrics import record_consumed
from app.errors import ConfigError
from app.firestore_limits import check_collection_id, check_document_id
from app.inbox import DEFAULT_INBOX_COLLECTION, Inbox, Verdict
from app.logs import log_event
from app.receiver import Answer, Received
from app.signed_events import MalformedDelivery, ReceivedEvent, parse_request, verify_request
from app.signing import (
    DEFAULT_TOLERANCE_SECONDS,
    SIGNED_ATTRIBUTES,
    InvalidSignature,
    parse_secrets,
)
from app.tracing import process_span, record_answer

if TYPE_CHECKING:
    from google.cloud.firestore import Client, Transaction

logger = logging.getLogger(__name__)

DEFAULT_CONSUMER = "order-counter"
DEFAULT_COUNTS_COLLECTION = "order_counts"


@dataclass(frozen=True, kw_only=True)
class ReceiverConfig:
    """The reference receiver's settings; `load_receiver_config()` reads them."""

    signing_secrets: tuple[str, ...] = field(default=(), repr=False)
    verify_signatures: bool = True
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS
    consumer: str = DEFAULT_CONSUMER
    inbox_collection: str = DEFAULT_INBOX_COLLECTION
    counts_collection: str = DEFAULT_COUNTS_COLLECTION
    firestore_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.verify_signatures and not self.signing_secrets:
            raise ConfigError(
                "RECEIVER_SIGNING_SECRET is not set: the receiver cannot verify deliveries "
                "(set it to the relay's RELAY_SIGNING_SECRET, or run with --no-verify)"
            )
        if not (math.isfinite(self.tolerance_seconds) and self.tolerance_seconds > 0):
            raise ConfigError("RECEIVER_SIGNATURE_TOLERANCE_SECONDS must be a number > 0")
        for variable, value in (
            ("INBOX_COLLECTION", self.inbox_collection),
            ("RECEIVER_COUNTS_COLLECTION", self.counts_collection),
        ):
            problem = check_collection_id(value)
            if problem:
                raise ConfigError(f"{variable} {problem}")


def load_receiver_config(
    environ: Mapping[str, str] | None = None, *, verify_signatures: bool = True
) -> ReceiverConfig:
    """Read the receiver's variables; `ConfigError` names a bad one, never a secret."""
    get = env_reader(environ)
    try:
        secrets = parse_secrets(get("RECEIVER_SIGNING_SECRET"))
    except ValueError as exc:
        raise ConfigError(f"RECEIVER_SIGNING_SECRET: {exc}") from None
    tolerance = get("RECEIVER_SIGNATURE_TOLERANCE_SECONDS")
    try:
        seconds = float(tolerance) if tolerance else DEFAULT_TOLERANCE_SECONDS
    except ValueError:
        raise ConfigError("RECEIVER_SIGNATURE_TOLERANCE_SECONDS must be a number > 0") from None
    return ReceiverConfig(
        signing_secrets=secrets,
        verify_signatures=verify_signatures,
        tolerance_seconds=seconds,
        consumer=get("RECEIVER_CONSUMER") or DEFAULT_CONSUMER,
        inbox_collection=get("INBOX_COLLECTION") or DEFAULT_INBOX_COLLECTION,
        counts_collection=get("RECEIVER_COUNTS_COLLECTION") or DEFAULT_COUNTS_COLLECTION,
    )


class _Refused(Exception):
    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status


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

    def __call__(self, request: Received) -> Answer:
        try:
            received = self._read(request)
        except _Refused as refused:
            return self._counted(_refusal(refused))
        # The relay's publish span continues here: one trace from the commit to the count.
        with process_span(
            received.trace, consumer=self._config.consumer, event_id=received.attributes.get("id")
        ) as span:
            answer = self._apply(received)
            record_answer(span, answer.status)
        return self._counted(answer)

    def _counted(self, answer: Answer) -> Answer:
        # Every answer is `_answer`'s JSON: its `status` is the verdict (or why not).
        record_consumed(self._config.consumer, json.loads(answer.body)["status"])
        return answer

    def _apply(self, received: ReceivedEvent) -> Answer:
        try:
            event = self._parse(received)
            customer = _customer_of(event) if event.get_type() == "OrderCreated" else None
            if customer is None:
                return _answer(200, "ignored", event.get_id())
            result = self.inbox.process_in_transaction(
                event.get_source(),
                event.get_id(),
                lambda transaction: self._count(transaction, customer),
            )
        except _Refused as refused:
            return _refusal(refused)
        except google_exceptions.GoogleAPIError as exc:
            log_event(logger, logging.ERROR, "receiver.firestore", f"Firestore failed: {exc}")
            return _answer(503, "unavailable", None, "Firestore unavailable", retry_after=1)
        except Exception as exc:  # a retry may succeed; the relay's attempts bound it
            log_event(logger, logging.ERROR, "receiver.failed", "delivery failed", exc_info=True)
            return _answer(500, "failed", None, f"{type(exc).__name__}: {exc}")
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
            return _answer(503, verdict.value, event_id, retry_after=result.retry_after or 1)
        if verdict is Verdict.PARKED:
            return _answer(422, verdict.value, event_id)
        return _answer(200, verdict.value, event_id)

    def _read(self, request: Received) -> ReceivedEvent:
        config = self._config
        try:
            if not config.verify_signatures:
                return parse_request(request.headers, request.body)
            return verify_request(
                request.headers,
                request.body,
                config.signing_secrets,
                tolerance=config.tolerance_seconds,
            )
        except MalformedDelivery as exc:
            raise _Refused(400, f"not a CloudEvent: {exc}") from None
        except InvalidSignature as exc:
            raise _Refused(401, f"signature: {exc}") from None

    def _parse(self, received: ReceivedEvent) -> CloudEvent:
        # Only the signed attributes reach the consumer: an unsigned extension is dropped.
        attributes: dict[str, Any] = {
            name: received.attributes[name]
            for name in SIGNED_ATTRIBUTES
            if name in received.attributes
        }
        try:
            if "time" in attributes:
                attributes["time"] = datetime.datetime.fromisoformat(
                    attributes["time"].replace("Z", "+00:00")
                )
            content_type = attributes.get("datacontenttype", "application/json")
            data = received.json_data() if _is_json(content_type) else received.data
            return CloudEvent(attributes, data)
        except Exception as exc:  # the SDK raises many kinds; none is worth a retry
            raise _Refused(400, f"not a CloudEvent: {type(exc).__name__}: {exc}") from None

    def _count(self, transaction: Transaction, customer: str) -> None:
        fields = {
            "customerId": customer,
            "orders": firestore.Increment(1),
            "updatedAt": firestore.SERVER_TIMESTAMP,
        }
        transaction.set(self._counts.document(customer), fields, merge=True)


def _refusal(refused: _Refused) -> Answer:
    log_event(
        logger,
        logging.WARNING,
        "receiver.refused",
        f"refused a delivery: {refused}",
        status=refused.status,
    )
    return _answer(refused.status, "rejected", None, str(refused))


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _customer_of(event: Any) -> str:
    data = event.get_data()
    customer = data.get("customerId") if isinstance(data, dict) else None
    if not isinstance(customer, str) or check_document_id(customer):
        raise _Refused(422, "OrderCreated without a usable customerId")
    return customer


def _answer(
    status: int,
    outcome: str,
    event_id: str | None,
    error: str | None = None,
    *,
    retry_after: float | None = None,
) -> Answer:
    body = {"status": outcome, "eventId": event_id, **({"error": error} if error else {})}
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    if retry_after is not None:
        headers += (("Retry-After", str(max(1, math.ceil(retry_after)))),)
    return Answer(status, headers, json.dumps(body).encode())
