"""`Fc3Publisher`: deliver each event by invoking a Function Compute 3.0 function, once.

The request is FC 3.0's InvokeFunction (`POST /2023-03-30/functions/{name}/invocations`,
`?qualifier=` for a version or alias), asynchronous (`x-fc-invocation-type: Async`), signed
with `ACS3-HMAC-SHA256` (`firestore_outbox.publishers.fc.acs3`) and sent over the relay's pooled,
deadline-bound transport. Its `x-fc-async-task-id` is derived from the event id (`task_id`), so
Function Compute itself refuses a second invocation of the same event: its `409` means the event was
already accepted, and is settled as delivered. (The function must have asynchronous tasks enabled
for task ids to be kept; Function Compute keeps them for 7 days.)

The body is the CloudEvent in structured mode, as for the FC 2.0 publisher
(`firestore_outbox.publishers.fc.fc2`):
an event function sees no HTTP headers; when signing, the Standard Webhooks signature travels
as the `webhookid`, `webhooktimestamp` and `webhooksignature` attributes.

Answers: 2xx delivered; 409 delivered (a duplicate task); 429 and 5xx retried (throttled,
busy); 401, 403, 404, 405 and the credential, permission and not-found error codes the
channel's; any other 4xx (`EntityTooLarge`, `InvalidArgument`, 413) rejected.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firestore_outbox.publishers.base import (
    Delivery,
    Outcome,
    PublisherOptions,
    PublishResult,
    classify_status,
)
from firestore_outbox.publishers.cloud import AccessKeyTarget, ApiPublisher, access_key
from firestore_outbox.publishers.fc.acs3 import Credentials, percent_encode, sign
from firestore_outbox.publishers.fc.shared import CHANNEL_ERRORS, error_code, signed_cloudevent
from firestore_outbox.publishers.http.answers import DownstreamAnswer
from firestore_outbox.publishers.http.publisher import USER_AGENT

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.fc.settings import Fc3Settings

API_VERSION = "2023-03-30"
# Function Compute's rule for task ids: a letter or `_` first, then letters, digits, `_`, `-`,
# 128 characters at most. An event id of these characters fits behind `e_` up to 126.
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,126}")


@dataclass(frozen=True, kw_only=True)
class Fc3Target(AccessKeyTarget):
    """The function to invoke (at https://ACCOUNT_ID.REGION.fc.aliyuncs.com) and the
    credentials to sign with."""

    function: str
    qualifier: str | None = None  # a version or alias
    # Whether each invocation names its task (`task_id`), so that Function Compute refuses a
    # second of the same event. Fan-out's invocations, never sent twice, name none and need
    # no asynchronous tasks enabled on the function.
    task_ids: bool = True


def task_id(event_id: str) -> str:
    """The task id of an event: `e_<event id>` when the id is made of letters, digits, `_`
    and `-` and fits, else `h_<hex SHA-256 of its UTF-8>`. Distinct events never share one
    (the prefixes keep the two forms apart), and the same event always gets the same."""
    if _PLAIN_ID.fullmatch(event_id):
        return f"e_{event_id}"
    digest = hashlib.sha256(event_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"h_{digest}"


class Fc3Publisher(ApiPublisher):
    """Invokes `target` asynchronously once per event; see the module's answers. With a
    `signer` each event carries its signature."""

    def __init__(self, target: Fc3Target, **options: Unpack[PublisherOptions]) -> None:
        super().__init__(target.secrets(), **options)
        self._host = target.host
        self._credentials = Credentials(
            target.access_key_id, target.access_key_secret, target.security_token
        )
        self._path = f"/{API_VERSION}/functions/{percent_encode(target.function)}/invocations"
        self._query = {"qualifier": target.qualifier} if target.qualifier else {}
        query = "&".join(f"{k}={percent_encode(v)}" for k, v in self._query.items())
        self._url = target.url(self._path + (f"?{query}" if query else ""))
        self._task_ids = target.task_ids

    def publish(self, delivery: Delivery) -> PublishResult:
        body = signed_cloudevent(delivery, self._signer)
        headers = {
            "host": self._host,
            "content-type": "application/json",
            "x-fc-invocation-type": "Async",
        }
        if self._task_ids:
            headers["x-fc-async-task-id"] = task_id(delivery.event_id)
        headers = sign(
            "POST",
            self._path,
            self._query,
            headers,
            body,
            self._credentials,
            action="InvokeFunction",
            version=API_VERSION,
        )
        headers["user-agent"] = USER_AGENT
        return self._transport.post(
            self._url, body, headers, deadline=delivery.deadline, outcome_of=_outcome
        )


def _outcome(answer: DownstreamAnswer) -> Outcome:
    if answer.status == 409:  # the task id is taken: this event was accepted before
        return Outcome.DELIVERED
    outcome = classify_status(answer.status)
    if outcome is not Outcome.DELIVERED and error_code(answer.excerpt) in CHANNEL_ERRORS:
        return Outcome.CHANNEL
    return outcome


def from_settings(settings: Fc3Settings, options: PublisherOptions) -> Fc3Publisher:
    """`RELAY_PUBLISHER=fc3`: the `RELAY_FC_*` function (`firestore_outbox.publishers.registry`)."""
    target = Fc3Target(
        endpoint=settings.endpoint,
        function=settings.function,
        qualifier=settings.qualifier,
        **access_key(settings.access_key),
    )
    return Fc3Publisher(target, **options)
