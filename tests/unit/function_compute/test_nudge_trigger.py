"""What `http_handler` lets through (`NudgeGate`), without Firestore: the body's bound judged
before decoding (plain and base64, at and past the limit), an event too large to parse, a
non-HTTP event left to `handler`, and a repeat remembered only within the tolerance."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.function_compute.nudge_trigger import (
    MAX_BODY_BYTES,
    MAX_EVENT_BYTES,
    NudgeGate,
    Refused,
    http_request,
)
from firestore_outbox.nudge.message import NUDGE_TYPE
from firestore_outbox.signing import Signer

SECRET = "nudge-secret-0123456789"
CONFIGURED = Configuration.load({"OUTBOX_NUDGE_SECRET": SECRET})
ATTRIBUTES = {
    "specversion": "1.0",
    "id": "nudge-1",
    "source": "//test",
    "type": NUDGE_TYPE,
    "subject": "3",
    "time": "2026-12-03T00:00:00Z",
    "datacontenttype": "application/json",
}


def request(body: bytes, *, binary: bool = False, at: float | None = None) -> dict[str, Any]:
    headers = {} if at is None else Signer([SECRET]).sign(ATTRIBUTES, body, timestamp=int(at))
    return {
        "version": "v1",
        "body": base64.b64encode(body).decode() if binary else body.decode(),
        "isBase64Encoded": binary,
        "headers": {k.title(): v for k, v in (headers.headers() if headers else {}).items()},
        "requestContext": {"http": {"method": "POST", "path": "/"}},
    }


def nudge(partitions: list[int], pad: int = 0) -> bytes:
    body = {**ATTRIBUTES, "data": {"partitions": partitions}, **({"pad": "x" * pad} if pad else {})}
    return json.dumps(body).encode()


def refusal(gate: NudgeGate, req: dict[str, Any]) -> int:
    with pytest.raises(Refused) as refused:
        gate.admit(req, CONFIGURED)
    return refused.value.status


@pytest.mark.parametrize("binary", [False, True])
def test_the_body_is_bounded_before_it_is_decoded_or_verified(binary: bool) -> None:
    gate = NudgeGate()
    base = len(nudge([3]))
    at_limit = nudge([3], pad=MAX_BODY_BYTES - base - 20)
    at_limit = at_limit + b" " * (MAX_BODY_BYTES - len(at_limit))
    assert len(at_limit) == MAX_BODY_BYTES
    assert refusal(gate, request(at_limit, binary=binary)) == 401  # read, then unsigned
    assert refusal(gate, request(at_limit + b" ", binary=binary)) == 413


def test_an_event_too_large_to_parse_is_refused_and_other_events_are_not_http() -> None:
    with pytest.raises(Refused) as refused:
        http_request(b" " * (MAX_EVENT_BYTES + 1))
    assert refused.value.status == 413
    timer = b'{"triggerTime": "2026-11-21T08:00:00Z", "triggerName": "relay-timer"}'
    for event in (timer, b"", None, {"type": NUDGE_TYPE}, b"not json", b"[1]"):
        assert http_request(event) is None
    assert http_request(json.dumps(request(b"{}")).encode()) is not None


def test_a_repeat_is_remembered_within_the_tolerance_only() -> None:
    now = [1_000_000.0]
    gate = NudgeGate(clock=lambda: now[0], tolerance=300)
    body = nudge([3])
    assert gate.admit(request(body, at=now[0]), CONFIGURED) is not None
    assert gate.admit(request(body, at=now[0]), CONFIGURED) is None  # the same webhook-id
    now[0] += 601  # forgotten after twice the tolerance: a new signature of the same nudge
    assert gate.admit(request(body, at=now[0]), CONFIGURED) is not None


def test_a_bad_base64_body_and_a_signed_non_nudge_are_refused_400() -> None:
    gate = NudgeGate()
    bad = request(b"{}", binary=True) | {"body": "not base64!"}
    assert refusal(gate, bad) == 400
    other = json.dumps({**ATTRIBUTES, "type": "OrderCreated", "data": {}}).encode()
    assert refusal(gate, request(other, at=time.time())) == 400
