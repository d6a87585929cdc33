"""`MnsPublisher`: deliver events to an MNS (Simple Message Queue) queue or topic.

A queue gets `BatchSendMessage` (`POST /queues/Q/messages`, up to 16 messages): concurrent
publishes are coalesced (`firestore_outbox.publishers.coalescer`) and each event gets its own
entry's result, so a partly failed batch (status 500, an `ErrorCode` on some entries) retries only
the failed events. A topic gets `PublishMessage` (`POST /topics/T/messages`), one event a request:
MNS has no batch publish for topics.

Each message: the body is the event's JSON payload (base64 for a queue, as the MNS SDKs send
and read it by default; as it is for a topic), and the CloudEvents attributes are user
properties `ce_id`, `ce_type`, `ce_source`, `ce_subject`, `ce_time`, `ce_specversion`,
`ce_datacontenttype`, plus the Standard Webhooks signature (`webhookid`, ...) when signing.
Consumers deduplicate on `ce_id`; MNS itself keeps no order and no dedup for queues.

Why not `aliyun-mns-sdk` (maintained, 1.3.0, works on 3.10): its client shares one
`http.client` connection between threads (the relay publishes from a pool), cannot bound a
request by a deadline, and logs requests at DEBUG with the STS token among the headers. The
API is small: `firestore_outbox.publishers.mns.xml_api` speaks it over the relay's pooled transport,
and the tests check our requests with the SDK's own signature code.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

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
from firestore_outbox.publishers.mns import xml_api

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.mns.settings import MnsSettings


@dataclass(frozen=True, kw_only=True)
class MnsTarget(AccessKeyTarget):
    """The queue or topic (exactly one; at https://ACCOUNT_ID.mns.REGION.aliyuncs.com) and the
    credentials that sign the requests."""

    queue: str | None = None
    topic: str | None = None

    def __post_init__(self) -> None:
        if (self.queue is None) == (self.topic is None):
            raise ValueError("an MNS target is a queue or a topic, exactly one")


class MnsPublisher(ApiPublisher):
    """Sends each event to `target`: queue messages in coalesced batches, topic messages one
    by one. `linger` is how long a batch waits for company (seconds)."""

    def __init__(
        self, target: MnsTarget, *, linger: float = 0.005, **options: Unpack[PublisherOptions]
    ) -> None:
        super().__init__(target.secrets(), **options)
        self._target = target
        kind, name = ("queues", target.queue) if target.queue else ("topics", target.topic)
        self._resource = f"/{kind}/{quote(str(name), safe='')}/messages"
        self._url = target.url(self._resource)
        self._host = target.host
        self._batches = Coalescer(
            self._send_batch,
            max_entries=xml_api.MAX_BATCH_MESSAGES,
            max_bytes=xml_api.MAX_BATCH_BYTES,
            size_of=self._body_size,
            linger=linger,
        )

    def publish(self, delivery: Delivery) -> PublishResult:
        size = self._body_size(delivery)
        if size > xml_api.MAX_BATCH_BYTES:
            return PublishResult(
                Outcome.REJECTED, f"MessageTooLarge: {size} bytes as sent, MNS takes 65536"
            )
        if self._target.queue:
            return self._batches.publish(delivery)
        root = xml_api.message_element(self._message(delivery))
        answer = self._post(xml_api.document(root), delivery.deadline)
        if isinstance(answer, PublishResult):
            return answer
        return self._result(answer)

    def _body_size(self, delivery: Delivery) -> int:
        size = len(delivery.body)
        return 4 * ((size + 2) // 3) if self._target.queue else size  # base64 for a queue

    def _message(self, delivery: Delivery) -> xml_api.Message:
        if self._target.queue:
            body = base64.b64encode(delivery.body).decode("ascii")
        else:
            body = delivery.body.decode("utf-8")
        properties = {f"ce_{k}": v for k, v in cloudevent_attributes(delivery).items()}
        if self._signer is not None:
            signed = self._signer.sign(cloudevent_attributes(delivery), delivery.body)
            properties.update(signed.attributes())
        return xml_api.Message(body, properties)

    def _send_batch(
        self, deliveries: Sequence[Delivery], deadline: float | None
    ) -> list[PublishResult]:
        messages = [self._message(delivery) for delivery in deliveries]
        answer = self._post(xml_api.batch_document(messages), deadline)
        if isinstance(answer, PublishResult):
            return [answer] * len(deliveries)
        # Success is 201 with a MessageId per entry; a partial failure is 500 with an
        # ErrorCode on the failed entries; any other answer speaks for the whole request.
        entries = xml_api.batch_answer(answer.body, len(deliveries))
        if entries is None or not (200 <= answer.status < 300 or any(entries)):
            return [self._result(answer)] * len(deliveries)
        return [self._entry_result(entry) for entry in entries]

    def _post(self, body: bytes, deadline: float | None) -> DownstreamAnswer | PublishResult:
        target = self._target
        headers = xml_api.signed_headers(
            self._resource,
            self._host,
            target.access_key_id,
            target.access_key_secret,
            target.security_token,
        )
        return self._transport.exchange(self._url, body, headers, deadline=deadline)

    def _result(self, answer: DownstreamAnswer) -> PublishResult:
        """A whole request's result: by MNS's error code where it has one, else by status."""
        outcome = classify_status(answer.status)
        if outcome is Outcome.DELIVERED:
            return PublishResult.delivered()
        code = xml_api.error_code(answer.body)
        return self._transport.refusal(_outcome_of_code(code, outcome), answer)

    def _entry_result(self, entry: xml_api.EntryError | None) -> PublishResult:
        if entry is None:
            return PublishResult.delivered()
        outcome = _outcome_of_code(entry.code, Outcome.RETRY)
        return self._transport.failure(outcome, f"MNS {entry.code}: {entry.message}")


# MNS error codes (API reference, "Error codes") that say what to do whatever the status.
_CHANNEL_CODES = frozenset(
    {
        "AccessDenied",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidSecurityToken",
        "SecurityTokenExpired",
        "TimeExpired",
        "QueueNotExist",
        "TopicNotExist",
    }
)
_REJECTED_CODES = frozenset({"InvalidArgument", "MalformedXML", "MessageNotExist"})
_RETRY_CODES = frozenset({"InternalError", "ServiceUnavailable", "QpsLimitExceeded"})


def _outcome_of_code(code: str | None, otherwise: Outcome) -> Outcome:
    if code in _CHANNEL_CODES:
        return Outcome.CHANNEL
    if code in _REJECTED_CODES:
        return Outcome.REJECTED
    if code in _RETRY_CODES:
        return Outcome.RETRY
    return otherwise  # an unknown code: as the status says (an entry's: retried)


def from_settings(settings: MnsSettings, options: PublisherOptions) -> MnsPublisher:
    """`RELAY_PUBLISHER=mns`: the `RELAY_MNS_*` queue or topic
    (`firestore_outbox.publishers.registry`)."""
    target = MnsTarget(
        endpoint=settings.endpoint,
        queue=settings.queue or None,
        topic=settings.topic or None,
        **access_key(settings.access_key),
    )
    return MnsPublisher(target, **options)
