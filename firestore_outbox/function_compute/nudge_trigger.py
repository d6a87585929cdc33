"""The relay behind an HTTP trigger: what `http_handler` lets through, and what it answers.

Function Compute 3.0 hands a built-in runtime's handler each HTTP request as an event (JSON:
`version`, `rawPath`, `headers` with their names capitalised and repeated values joined by
commas, `queryParameters`, `body`, base64 when `isBase64Encoded`, `requestContext.http.method`)
and turns the `{statusCode, headers, body}` returned into the HTTP response. An anonymous
trigger lets anyone call, so the signature is the authentication: a nudge is the producer's
CloudEvent JSON signed with `OUTBOX_NUDGE_SECRET` (Standard Webhooks, `firestore_outbox.signing`).

`NudgeGate.admit` checks a request in this order, each before the next and all of them before
anything asks Firestore: the secret is configured (else 503, naming the variable); POST (405);
the body within `MAX_BODY_BYTES`, judged on the event's text before any decoding (413); the
body decodes (400); the signature, its timestamp within `TOLERANCE_SECONDS` (401); a
`webhook-id` this instance already took within the tolerance is answered 200 `duplicate`,
nothing run (repeats of one burst from several producer processes share it, as FC's task ids
do; a captured nudge replayed later is stale); the body is a nudge with at least one partition
of this relay (400).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from firestore_outbox.config.loader import Configuration
from firestore_outbox.errors import OutboxError
from firestore_outbox.nudge.message import NUDGE_TYPE, read_nudge
from firestore_outbox.observability.logs import log_event
from firestore_outbox.signing import (
    DEFAULT_TOLERANCE_SECONDS,
    InvalidSignature,
    signature_headers,
    verify,
)

__all__ = [
    "MAX_BODY_BYTES",
    "TOLERANCE_SECONDS",
    "NudgeGate",
    "Refused",
    "duplicate",
    "http_request",
    "ran",
    "response",
]

# A producer's nudge is a few hundred bytes (its partitions, at most RELAY_PARTITIONS of them).
MAX_BODY_BYTES = 64 * 1024
# A whole event beyond this is not parsed at all (the body's bound plus room for headers).
MAX_EVENT_BYTES = 4 * MAX_BODY_BYTES
TOLERANCE_SECONDS = DEFAULT_TOLERANCE_SECONDS
_SEEN_MAX = 4096  # webhook-ids remembered per instance (the oldest go first)

logger = logging.getLogger("firestore_outbox.relay")


class Refused(Exception):
    """A request `http_handler` answers without running anything: `status` and `reason`
    (safe to answer and log: never a secret, a signature or a value of the body)."""

    def __init__(self, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = headers or {}

    def answer(self, request_id: str | None) -> dict[str, Any]:
        """Log this refusal (never a signature or a secret) and answer it: the Function
        Compute 3.0 HTTP response."""
        log_event(
            logger,
            logging.WARNING,
            "relay.nudge_refused",
            f"nudge refused ({self.status}): {self.reason}",
            status=self.status,
            requestId=request_id,
        )
        return response(self.status, {"status": "refused", "error": self.reason}, self.headers)


def response(
    status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A Function Compute 3.0 HTTP response: `status` with `body` as JSON."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "isBase64Encoded": False,
        "body": json.dumps(body, separators=(",", ":")),
    }


# What a nudge's answer tells its sender of the run (the rest is in the summary's log line).
_ANSWERED = (
    "status",
    "stoppedBy",
    "nudged",
    "processed",
    "failed",
    "retried",
    "handedOff",
    "nudgeRefused",
    "nudgeRefusal",
    "requestId",
    "durationMs",
)


def duplicate() -> dict[str, Any]:
    """The answer to a repeat of a nudge this instance ran within the tolerance."""
    return response(200, {"status": "duplicate", "nudged": []})


def ran(summary: dict[str, Any]) -> dict[str, Any]:
    """The HTTP response of a nudged run: 200 with what ran, 503 when it could not run (not
    configured, Firestore failing: the timer delivers)."""
    status = 503 if summary.get("status") == "error" else 200
    return response(status, {name: summary[name] for name in _ANSWERED if name in summary})


def http_request(event: bytes | str | dict[str, Any] | None) -> dict[str, Any] | None:
    """`event` as an HTTP trigger's request (a dict with `requestContext.http`), or None when
    it is another event (a timer's, an `InvokeFunction`'s: only Function Compute's own,
    authenticated callers send those). `Refused` (413) for an event too large to read."""
    if isinstance(event, (bytes, str)):
        if len(event) > MAX_EVENT_BYTES:
            raise Refused(413, f"the request is larger than {MAX_EVENT_BYTES} bytes")
        try:
            event = json.loads(event) if event.strip() else None
        except ValueError:
            return None
    if not isinstance(event, dict):
        return None
    context = event.get("requestContext")
    if isinstance(context, dict) and isinstance(context.get("http"), dict):
        return event
    return None


class NudgeGate:
    """Admits the signed nudges of HTTP trigger requests (see the module); remembers the
    `webhook-id`s it admitted within the tolerance, per instance."""

    def __init__(
        self,
        *,
        tolerance: float = TOLERANCE_SECONDS,
        max_bytes: int = MAX_BODY_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._tolerance = tolerance
        self._max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, float] = OrderedDict()

    def admit(self, request: dict[str, Any], configuration: Configuration) -> dict[str, Any] | None:
        """The verified nudge (its CloudEvent as a dict) of `request`, for the relay
        `configuration` sets up (its `OUTBOX_NUDGE_SECRET`, its `RELAY_PARTITIONS`); None for
        a repeat of one admitted within the tolerance. `Refused` says why not; nothing here
        asks Firestore anything."""
        try:
            secrets = configuration.nudge_secrets()
            count = configuration.partitions().count
        except OutboxError as exc:
            raise Refused(503, str(exc)) from None
        if not secrets:
            raise Refused(503, "OUTBOX_NUDGE_SECRET is not set: every nudge is refused")
        http = request["requestContext"]["http"]
        if str(http.get("method") or "").upper() != "POST":
            raise Refused(405, "only POST nudges the relay", {"Allow": "POST"})
        body = _body(request, self._max_bytes)
        headers = request.get("headers")
        webhook_id, timestamp, signature = signature_headers(
            headers if isinstance(headers, dict) else {}
        )
        now = self._clock()
        try:
            verify(
                webhook_id, timestamp, signature, body, secrets, tolerance=self._tolerance, now=now
            )
        except InvalidSignature as exc:
            raise Refused(401, f"unauthorised: {exc}") from None
        try:
            nudge = json.loads(body)
        except ValueError:
            raise Refused(400, "the body is not JSON") from None
        if not isinstance(nudge, dict) or nudge.get("type") != NUDGE_TYPE:
            raise Refused(400, f"the body is not a CloudEvent of type {NUDGE_TYPE}")
        read = read_nudge(nudge, count)
        if read is None or not read.partitions:
            reason = read.reason if read is not None else None
            raise Refused(400, f"no partition of this relay to drain: {reason}")
        return nudge if self._first(str(webhook_id), now) else None

    def _first(self, webhook_id: str, now: float) -> bool:
        """Whether `webhook_id` is new within the tolerance (then remembered)."""
        with self._lock:
            while self._seen and (
                len(self._seen) >= _SEEN_MAX
                or next(iter(self._seen.values())) < now - 2 * self._tolerance
            ):
                self._seen.popitem(last=False)
            if webhook_id in self._seen:
                return False
            self._seen[webhook_id] = now
            return True


def _body(request: dict[str, Any], max_bytes: int) -> bytes:
    """The request's body as sent: its size judged on the event's text before decoding."""
    raw = request.get("body") or ""
    if not isinstance(raw, str):
        raise Refused(400, "the event's body is not text")
    encoded = bool(request.get("isBase64Encoded"))
    # base64 holds 3 bytes in 4 characters; plain text at least one byte a character.
    if len(raw) > (4 * -(-max_bytes // 3) if encoded else max_bytes):
        raise Refused(413, f"the body is larger than {max_bytes} bytes")
    if not encoded:
        body = raw.encode("utf-8", "surrogatepass")
    else:
        try:
            body = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise Refused(400, "the body is not valid base64") from None
    if len(body) > max_bytes:
        raise Refused(413, f"the body is larger than {max_bytes} bytes")
    return body
