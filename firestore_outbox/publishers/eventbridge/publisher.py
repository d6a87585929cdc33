"""`EventBridgePublisher`: deliver events to an Alibaba Cloud EventBridge event bus.

`PutEvents` (`POST /openapi/putEvents`, `application/cloudevents-batch+json`) takes a JSON list
of CloudEvents: each event goes as it is, structured (`specversion`, `id`, `type`, `source`,
`subject`, `time`, `datacontenttype`, `data`), with the bus as the `aliyuneventbusname`
extension and, when signing, the Standard Webhooks signature as `webhookid`,
`webhooktimestamp`, `webhooksignature`. Concurrent publishes are coalesced into batches of at
most 16 events and 256 KiB (`firestore_outbox.publishers.coalescer`); the answer's `EntryList` gives
each event its own result (an `ErrorCode` on a failed entry, `FailedEntryCount` how many), so only
the failed events are retried. EventBridge keeps no order; consumers deduplicate on the id.

Requests are signed by the EventBridge SDK's own signer (`alibabacloud_eventbridge_util`) and
sent over the relay's pooled, deadline-bound transport rather than the SDK's client, which
retries by itself (up to 3 attempts, past any lease) and has no per-call deadline.
"""

from __future__ import annotations

import email.utils
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING

from alibabacloud_eventbridge_util.client import Client as EventBridgeSigner

from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    PublisherOptions,
    PublishResult,
    classify_status,
    cloudevent_attributes,
)
from firestore_outbox.publishers.cloud import AccessKeyTarget, ApiPublisher, access_key
from firestore_outbox.publishers.coalescer import Coalescer
from firestore_outbox.publishers.http.answers import DownstreamAnswer
from firestore_outbox.publishers.http.publisher import USER_AGENT

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.eventbridge.settings import EventBridgeSettings

PATH = "/openapi/putEvents"
CONTENT_TYPE = "application/cloudevents-batch+json; charset=utf-8"
MAX_BATCH_EVENTS = 16
MAX_BATCH_BYTES = 256 * 1024


@dataclass(frozen=True, kw_only=True)
class EventBridgeTarget(AccessKeyTarget):
    """The event bus (at https://ACCOUNT_ID.eventbridge.REGION.aliyuncs.com) and the
    credentials that sign the requests."""

    bus: str


class EventBridgePublisher(ApiPublisher):
    """Puts each event on `target.bus`, in coalesced batches."""

    def __init__(
        self,
        target: EventBridgeTarget,
        *,
        linger: float = 0.005,
        **options: Unpack[PublisherOptions],
    ) -> None:
        super().__init__(target.secrets(), **options)
        self._target = target
        self._url = target.url(PATH)
        self._host = target.host
        self._batches = Coalescer(
            self._send_batch,
            max_entries=MAX_BATCH_EVENTS,
            max_bytes=MAX_BATCH_BYTES,
            size_of=lambda delivery: len(self._event(delivery)),
            linger=linger,
        )

    def publish(self, delivery: Delivery) -> PublishResult:
        size = len(self._event(delivery))
        if size > MAX_BATCH_BYTES:
            return PublishResult(
                Outcome.REJECTED, f"EventTooLarge: {size} bytes, PutEvents takes 262144"
            )
        return self._batches.publish(delivery)

    def _event(self, delivery: Delivery) -> bytes:
        """One structured CloudEvent, its data spliced in unparsed, last."""
        attributes = cloudevent_attributes(delivery)
        attributes["aliyuneventbusname"] = self._target.bus
        if self._signer is not None:
            signature = self._signer.sign(cloudevent_attributes(delivery), delivery.body)
            attributes.update(signature.attributes())
        head = json.dumps(attributes, ensure_ascii=False, separators=(",", ":"))[:-1]
        return head.encode() + b',"data":' + delivery.body + b"}"

    def _send_batch(
        self, deliveries: Sequence[Delivery], deadline: float | None
    ) -> list[PublishResult]:
        body = b"[" + b",".join(self._event(d) for d in deliveries) + b"]"
        answer = self._transport.exchange(self._url, body, self._headers(), deadline=deadline)
        if isinstance(answer, PublishResult):
            return [answer] * len(deliveries)
        if not 200 <= answer.status < 300:
            outcome = _outcome_of_code(_json(answer.body).get("code"), answer.status)
            return [self._transport.refusal(outcome, answer)] * len(deliveries)
        return self._entry_results(deliveries, answer)

    def _entry_results(
        self, deliveries: Sequence[Delivery], answer: DownstreamAnswer
    ) -> list[PublishResult]:
        """Each event's entry in `EntryList`, found by its `EventId`; an event the answer does
        not account for is retried (the answer said success, but not for it)."""
        entries = _json(answer.body).get("EntryList")
        listed = entries if isinstance(entries, list) else []
        by_id = {e.get("EventId"): e for e in listed if isinstance(e, dict)}
        results = []
        for delivery in deliveries:
            entry = by_id.get(delivery.event_id)
            if entry is None:
                error = "PutEvents answered without an entry for this event"
                results.append(self._transport.failure(Outcome.RETRY, error))
            elif entry.get("ErrorCode"):
                code, message = str(entry["ErrorCode"]), str(entry.get("ErrorMessage", ""))
                outcome = _outcome_of_code(code, None)
                results.append(self._transport.failure(outcome, f"{code}: {message}"))
            else:
                results.append(PublishResult.delivered())
        return results

    def _headers(self) -> dict[str, str]:
        target = self._target
        headers = {
            "date": email.utils.formatdate(usegmt=True),
            "host": self._host,
            "accept": "application/json",
            "content-type": CONTENT_TYPE,
            "user-agent": USER_AGENT,
            "x-acs-signature-nonce": uuid.uuid4().hex,
            "x-acs-signature-method": "HMAC-SHA1",
            "x-acs-signature-version": "1.0",
            "x-eventbridge-version": "2015-06-06",
        }
        if target.security_token:
            headers["x-acs-accesskey-id"] = target.access_key_id
            headers["x-acs-security-token"] = target.security_token
        request = SimpleNamespace(method="POST", pathname=PATH, headers=headers, query={})
        text = EventBridgeSigner.get_string_to_sign(request)
        signature = EventBridgeSigner.get_signature(text, target.access_key_secret)
        headers["authorization"] = f"acs:{target.access_key_id}:{signature}"
        return headers


# EventBridge's error codes (request `code`, entry `ErrorCode`) that decide the outcome.
_CHANNEL_CODES = frozenset(
    {
        "EventBusNotExist",
        "AccessDenied",
        "Forbidden",
        "InvalidAccessKeyId",
        "InvalidAccessKeyId.NotFound",
        "SignatureDoesNotMatch",
        "SignatureNotMatch",
        "InvalidSecurityToken",
        "SecurityTokenExpired",
    }
)
_REJECTED_CODES = frozenset({"InvalidArgument", "EventSizeExceeded", "InvalidCloudEvent"})


def _outcome_of_code(code: object, status: int | None) -> Outcome:
    if code in _CHANNEL_CODES:
        return Outcome.CHANNEL
    if code in _REJECTED_CODES:
        return Outcome.REJECTED
    # An unknown code: as the status says; an entry's (no status of its own) is retried.
    return Outcome.RETRY if status is None else classify_status(status)


def _json(body: bytes) -> dict[str, object]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def from_settings(settings: EventBridgeSettings, options: PublisherOptions) -> EventBridgePublisher:
    """`RELAY_PUBLISHER=eventbridge`: the `RELAY_EVENTBRIDGE_*` bus
    (`firestore_outbox.publishers.registry`)."""
    target = EventBridgeTarget(
        endpoint=settings.endpoint, bus=settings.bus, **access_key(settings.access_key)
    )
    return EventBridgePublisher(target, **options)
