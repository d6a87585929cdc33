"""A local EventBridge endpoint for the tests: `PutEvents` as EventBridge answers it, each
request's `acs` signature checked by this module's own implementation of the recipe
(HMAC-SHA1 over the verb, Content-MD5, Content-Type, Date, the sorted `x-acs-*` headers and the
path), independent of the SDK signer the publisher uses.

Scripted failures: `entry_errors` maps an event id to the `ErrorCode` its entry gets (the
others are accepted, `FailedEntryCount` counts them); `request_error` answers the whole request
with `(status, code)` instead."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from tests.support.local_endpoint import LocalEndpoint

KEY_ID, SECRET, TOKEN = "LTAI-eb-key", "eb-s3cret-value", "eb-sts-t0ken"


def expected_authorization(request: Received) -> str:
    h = request.headers
    acs = "".join(f"{k}:{h[k]}\n" for k in sorted(h) if k.startswith("x-acs"))
    text = f"POST\n{h.get('content-md5', '')}\n{h.get('content-type', '')}\n{h['date']}\n"
    digest = hmac.new(SECRET.encode(), (text + acs + request.path).encode(), hashlib.sha1)
    return f"acs:{KEY_ID}:{base64.b64encode(digest.digest()).decode()}"


@dataclass
class EventBridgeServer(LocalEndpoint):
    """`start()` it; `endpoint` is its URL, `events` the CloudEvents it accepted, `batches`
    the ids of each request in order."""

    entry_errors: dict[str, str] = field(default_factory=dict)
    request_error: tuple[int, str] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    batches: list[list[str]] = field(default_factory=list)

    def handle(self, request: Received) -> ReceiverAnswer:
        if request.path != "/openapi/putEvents":
            return _answer(404, {"code": "NotFound", "message": request.path})
        if request.headers.get("authorization") != expected_authorization(request):
            return _answer(403, {"code": "SignatureDoesNotMatch", "message": "signature"})
        if request.headers.get("x-acs-security-token") != TOKEN:
            return _answer(403, {"code": "InvalidSecurityToken", "message": "token"})
        if not request.headers.get("content-type", "").startswith(
            "application/cloudevents-batch+json"
        ):
            return _answer(400, {"code": "InvalidArgument", "message": "content type"})
        if self.request_error is not None:
            status, code = self.request_error
            return _answer(status, {"code": code, "message": f"scripted, key {SECRET}"})
        events = json.loads(request.body)
        if not 1 <= len(events) <= 16 or len(request.body) > 256 * 1024:
            return _answer(400, {"code": "InvalidArgument", "message": "1 to 16, 256 KB"})
        entries = []
        with self._lock:
            self.batches.append([event["id"] for event in events])
            for event in events:
                code = self.entry_errors.get(event["id"])
                entry = {"EventId": event["id"], "TraceId": "t"}
                if code:
                    entry.update(ErrorCode=code, ErrorMessage="scripted")
                else:
                    self.events.append(event)
                entries.append(entry)
        failed = sum(1 for entry in entries if "ErrorCode" in entry)
        return _answer(
            200,
            {
                "RequestId": "r-1",
                "ResourceOwnerAccountId": "1",
                "FailedEntryCount": failed,
                "EntryList": entries,
            },
        )


def _answer(status: int, body: dict[str, Any]) -> ReceiverAnswer:
    return ReceiverAnswer(
        status, (("Content-Type", "application/json"),), json.dumps(body).encode()
    )
