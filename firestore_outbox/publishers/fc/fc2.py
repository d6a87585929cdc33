"""`FcPublisher`: deliver each event by invoking a Function Compute function.

The request is the Function Compute invoke API (`POST /2016-08-15/services/S/functions/F/
invocations`), signed by aliyun-fc2's own signer (`fc2.auth.Auth`), asynchronous by default.
It is sent over our pooled transport rather than `fc2.Client.invoke_function`, which retries 5xx
itself up to five times with sleeps of 1 to 16 s (past any lease), opens a new connection per
call, logs the request headers (the STS security token among them) at ERROR on 4xx/5xx, and
raises a JSON decoding error instead of `FcError` when an error body is not JSON.

An event function sees no HTTP headers, so the payload is the CloudEvent in structured mode:
`{"specversion", "id", "type", "source", "subject", "time", "datacontenttype", "data"}`,
with `data` last and, when signing, the Standard Webhooks signature as the `webhookid`,
`webhooktimestamp` and `webhooksignature` attributes
(`firestore_outbox.consumer.events.verify_event` checks
them). The invocation itself is authenticated by
Function Compute.
"""

from __future__ import annotations

import email.utils
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote

from fc2.auth import Auth

from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    PublisherOptions,
    PublishResult,
    classify_status,
    header_value,
)
from firestore_outbox.publishers.cloud import AccessKeyTarget, ApiPublisher, access_key
from firestore_outbox.publishers.fc.shared import CHANNEL_ERRORS, error_code, signed_cloudevent
from firestore_outbox.publishers.http.answers import DownstreamAnswer
from firestore_outbox.publishers.http.publisher import USER_AGENT

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.fc.settings import FcSettings

API_VERSION = "2016-08-15"


@dataclass(frozen=True, kw_only=True)
class FcTarget(AccessKeyTarget):
    """The function to invoke (at https://ACCOUNT_ID.REGION.fc.aliyuncs.com) and the
    credentials to sign with."""

    service: str
    function: str
    qualifier: str | None = None
    asynchronous: bool = True


class FcPublisher(ApiPublisher):
    """Invokes `target` once per event; the answer is classified like an HTTP delivery, and a
    synchronous invocation whose function raised (`X-Fc-Error-Type`) is retried. With a
    `signer` each event carries its signature."""

    def __init__(self, target: FcTarget, **options: Unpack[PublisherOptions]) -> None:
        super().__init__(target.secrets(), **options)
        self._target = target
        self._auth = Auth(
            target.access_key_id, target.access_key_secret, target.security_token or ""
        )
        service = target.service + (f".{target.qualifier}" if target.qualifier else "")
        self._path = f"/{API_VERSION}/services/{service}/functions/{target.function}/invocations"
        self._url = target.url(quote(self._path))

    def publish(self, delivery: Delivery) -> PublishResult:
        body = signed_cloudevent(delivery, self._signer)
        headers = {
            "host": self._target.host,
            "date": email.utils.formatdate(usegmt=True),
            "content-type": "application/json",
            "content-length": str(len(body)),
            "user-agent": USER_AGENT,
            "x-fc-invocation-type": "Async" if self._target.asynchronous else "Sync",
            "x-fc-trace-id": header_value(delivery.event_id),
        }
        if self._target.security_token:
            headers["x-fc-security-token"] = self._target.security_token
        headers["authorization"] = self._auth.sign_request("POST", self._path, headers)
        return self._transport.post(
            self._url, body, headers, deadline=delivery.deadline, outcome_of=_outcome
        )


def _outcome(answer: DownstreamAnswer) -> Outcome:
    outcome = classify_status(answer.status)
    if outcome is Outcome.DELIVERED and answer.headers.get("X-Fc-Error-Type"):
        return Outcome.RETRY  # the function ran and failed
    if outcome is not Outcome.DELIVERED and error_code(answer.excerpt) in CHANNEL_ERRORS:
        return Outcome.CHANNEL
    return outcome


def from_settings(settings: FcSettings, options: PublisherOptions) -> FcPublisher:
    """`RELAY_PUBLISHER=fc`: the `RELAY_FC_*` function (`firestore_outbox.publishers.registry`)."""
    target = FcTarget(
        endpoint=settings.endpoint,
        service=settings.service,
        function=settings.function,
        qualifier=settings.qualifier,
        asynchronous=settings.invocation_type == "async",
        **access_key(settings.access_key),
    )
    return FcPublisher(target, **options)
