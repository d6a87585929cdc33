"""The reference consumer's side of the relay's wire table: a signed HTTP delivery read into a
`cloudevents` SDK event, and each outcome into the answer the relay expects.

A request is read once (`firestore_outbox.consumer.events`: one mode, ambiguity refused) and
verified; the event is built from exactly what was verified. A refusal is a 4xx, which the relay
does not retry: 400 for what is not a CloudEvent, 401 for a bad signature, 422 for a poison event.
Every answer's JSON body carries `status` (the verdict, or why not) and `eventId`.
"""

from __future__ import annotations

import datetime
import json
import logging
import math
from typing import Any

from cloudevents.core.v1.event import CloudEvent

from firestore_outbox.consumer.events import (
    MalformedDelivery,
    ReceivedEvent,
    parse_request,
    verify_request,
)
from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from firestore_outbox.consumer.receiver_settings import ReceiverConfig
from firestore_outbox.observability.logs import log_event
from firestore_outbox.signing import (
    OPTIONAL_SIGNED_ATTRIBUTES,
    SIGNED_ATTRIBUTES,
    InvalidSignature,
)

logger = logging.getLogger(__name__)


class DeliveryRefused(Exception):
    """A delivery refused with a 4xx `status`: retrying it cannot help."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status = status


def read_delivery(request: Received, config: ReceiverConfig) -> ReceivedEvent:
    """The request's event, its signature verified unless `config` says not to."""
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
        raise DeliveryRefused(400, f"not a CloudEvent: {exc}") from None
    except InvalidSignature as exc:
        raise DeliveryRefused(401, f"signature: {exc}") from None


def to_cloudevent(received: ReceivedEvent) -> CloudEvent:
    """A `cloudevents` SDK event of the received event's signed attributes and its data."""
    # Only the signed attributes reach the consumer: an unsigned extension is dropped.
    signed = (*SIGNED_ATTRIBUTES, *OPTIONAL_SIGNED_ATTRIBUTES)
    attributes: dict[str, Any] = {
        name: received.attributes[name] for name in signed if name in received.attributes
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
        raise DeliveryRefused(400, f"not a CloudEvent: {type(exc).__name__}: {exc}") from None


def refused_answer(refused: DeliveryRefused) -> ReceiverAnswer:
    """The answer to a refused delivery, logged as `receiver.refused`."""
    log_event(
        logger,
        logging.WARNING,
        "receiver.refused",
        f"refused a delivery: {refused}",
        status=refused.status,
    )
    return json_answer(refused.status, "rejected", None, str(refused))


def json_answer(
    status: int,
    outcome: str,
    event_id: str | None,
    error: str | None = None,
    *,
    retry_after: float | None = None,
) -> ReceiverAnswer:
    """A JSON answer: `{"status": outcome, "eventId": ..., "error": ...}`."""
    body = {"status": outcome, "eventId": event_id, **({"error": error} if error else {})}
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    if retry_after is not None:
        headers += (("Retry-After", str(max(1, math.ceil(retry_after)))),)
    return ReceiverAnswer(status, headers, json.dumps(body).encode())


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")
