"""The relay behind an (anonymous) HTTP trigger, on the real emulator: `http_handler` takes
FC 3.0's HTTP event (plain or base64 body), drains the partitions of a nudge signed with
`OUTBOX_NUDGE_SECRET` and answers an HTTP response; a request that is forged, unsigned,
stale, altered, oversized or no POST is refused with its status before anything connects to
Firestore (the relay is pointed at a listening socket that must see no connection). A
timer's event still drains."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute import RelayFunction
from firestore_outbox.nudge.targets import HttpNudge
from firestore_outbox.signing import Signer
from tests.support.fc3_http import http_event
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    configured_relay,  # noqa: F401  (the relay configured for the emulator)
    fc_context,
    use,
)
from tests.support.helpers import add_orders, outbox

SECRET = "nudge-secret-0123456789"
OTHER = "another-secret-0123456789"


def captured(partitions: list[int], secret: str = SECRET) -> Received:
    """A nudge as the `http` sender signs and POSTs it, captured by a local server."""
    with Receiver() as server:
        sender = HttpNudge(server.url, 2.0, count=16, secrets=(secret,))
        try:
            assert sender.send(frozenset(partitions))
        finally:
            sender.close()
        [request] = server.wait_for(1, timeout=10)
    return request


def event_of(request: Received, *, binary: bool = False, method: str = "POST") -> bytes:
    """The FC 3.0 HTTP event of `request` (its signature headers, content type and body)."""
    headers = {name: value for name, value in request.headers.items() if name != "host"}
    return http_event(method, "/nudge", request.body, binary, **headers)


def body_of(response: dict[str, Any]) -> dict[str, Any]:
    assert response["headers"]["Content-Type"] == "application/json"
    answer: dict[str, Any] = json.loads(response["body"])
    return answer


@pytest.fixture
def nudge_relay(
    configured_relay: None,  # noqa: F811  (the fixture, imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> RelayFunction:
    use(monkeypatch, {"OUTBOX_NUDGE_SECRET": SECRET})
    return RelayFunction()


@pytest.mark.parametrize("binary", [False, True], ids=["plain", "base64"])
def test_a_signed_nudge_drains_its_partition_only_and_answers_200(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    nudge_relay: RelayFunction,
    binary: bool,
) -> None:
    add_orders(db, settings, 6)
    events = outbox(db, settings)
    partition = min(e["partition"] for e in events.values())
    inside = {k for k, e in events.items() if e["partition"] == partition}
    assert inside != set(events)  # some events lie in other partitions

    response = nudge_relay.http_handler(
        event_of(captured([partition]), binary=binary), fc_context()
    )

    assert response["statusCode"] == 200, response
    answer = body_of(response)
    assert answer["status"] == "ok" and answer["nudged"] == [partition], answer
    assert answer["processed"] == len(inside) and answer["requestId"] == "req-1"
    assert {r.event_id for r in receiver.received} == inside
    statuses = {k: e["status"] for k, e in outbox(db, settings).items()}
    assert statuses == {k: "PROCESSED" if k in inside else "PENDING" for k in events}


@pytest.fixture
def dead_firestore(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """The relay's Firestore pointed at a listening socket nobody answers: a connection
    attempt completes into its backlog, so `accept` tells whether anything connected."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{listener.getsockname()[1]}")
        yield listener


def signed(body: bytes, secret: str = SECRET, *, ago: int = 0) -> dict[str, str]:
    """Standard Webhooks headers for `body` (a nudge's JSON), as the sender makes them."""
    attributes = {k: v for k, v in json.loads(body).items() if isinstance(v, str)}
    signer = Signer([secret])
    return signer.sign(attributes, body, timestamp=int(time.time()) - ago).headers()


def forged(request: Received) -> bytes:
    return http_event("POST", "/nudge", request.body, **signed(request.body, OTHER))


def unsigned(request: Received) -> bytes:
    return http_event("POST", "/nudge", request.body)


def stale(request: Received) -> bytes:
    # The same body signed with the right secret, 301 s ago: a replay outside the tolerance.
    return http_event("POST", "/nudge", request.body, **signed(request.body, ago=301))


def altered(request: Received) -> bytes:
    body = request.body.replace(b'"partitions": [', b'"partitions": [0, 1, 2, 3, ')
    assert body != request.body
    return http_event("POST", "/nudge", body, **request.headers)


def oversized(request: Received) -> bytes:
    # Padded past the bound inside the JSON (still a nudge), signed with the right secret.
    body = request.body[:-1] + b',"pad":"' + b"x" * 70_000 + b'"}'
    return http_event("POST", "/nudge", body, True, **signed(body))


def read_with_get(request: Received) -> bytes:
    return event_of(request, method="GET")


@pytest.mark.parametrize(
    ("make", "status", "reason"),
    [
        (forged, 401, "no signature matches"),
        (unsigned, 401, "missing webhook-id, webhook-timestamp, webhook-signature"),
        (stale, 401, "timestamp outside the tolerance of 300 s"),
        (altered, 401, "no signature matches"),
        (oversized, 413, "larger than 65536 bytes"),
        (read_with_get, 405, "only POST"),
    ],
)
def test_a_request_that_is_not_a_signed_nudge_is_refused_before_any_firestore_call(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    nudge_relay: RelayFunction,
    dead_firestore: socket.socket,
    make: Any,
    status: int,
    reason: str,
) -> None:
    events = add_orders(db, settings, 3)  # on the real emulator, through the test's client
    partition = outbox(db, settings)[events[0]]["partition"]

    response = nudge_relay.http_handler(make(captured([partition])), fc_context())

    assert response["statusCode"] == status, response
    assert reason in body_of(response)["error"]
    if status == 405:
        assert response["headers"]["Allow"] == "POST"
    assert nudge_relay.relay is None  # no relay, so no Firestore client, was built
    with pytest.raises(BlockingIOError):
        dead_firestore.accept()  # nothing connected to "Firestore"
    assert {outbox(db, settings)[e]["status"] for e in events} == {"PENDING"}
    assert receiver.received == []


@pytest.mark.usefixtures("configured_relay", "dead_firestore")
def test_without_the_secret_every_request_is_refused_naming_the_variable(
    receiver: Receiver,
) -> None:
    function = RelayFunction()

    response = function.http_handler(event_of(captured([3])), fc_context())

    assert response["statusCode"] == 503
    assert "OUTBOX_NUDGE_SECRET is not set" in body_of(response)["error"]
    assert function.relay is None and receiver.received == []


@pytest.mark.usefixtures("configured_relay")
def test_a_malformed_secret_is_refused_naming_the_variable_never_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use(monkeypatch, {"OUTBOX_NUDGE_SECRET": "short-secret"})

    response = RelayFunction().http_handler(event_of(captured([3])), fc_context())

    assert response["statusCode"] == 503
    error = body_of(response)["error"]
    assert error.startswith("OUTBOX_NUDGE_SECRET: ") and "short-secret" not in error


def test_a_nudge_taken_once_is_answered_duplicate_when_repeated_and_runs_nothing(
    db: firestore.Client, settings: Settings, receiver: Receiver, nudge_relay: RelayFunction
) -> None:
    [event_id] = add_orders(db, settings, 1)
    request = captured([outbox(db, settings)[event_id]["partition"]])

    first = nudge_relay.http_handler(event_of(request), fc_context("first"))
    again = nudge_relay.http_handler(event_of(request, binary=True), fc_context("again"))

    assert body_of(first)["processed"] == 1
    assert again["statusCode"] == 200
    assert body_of(again) == {"status": "duplicate", "nudged": []}
    assert [r.event_id for r in receiver.received] == [event_id]


def test_a_signed_body_that_is_no_nudge_is_refused_400(
    db: firestore.Client, settings: Settings, nudge_relay: RelayFunction
) -> None:
    refused = captured([99])  # no partition of a 16-partition relay

    response = nudge_relay.http_handler(event_of(refused), fc_context())

    assert response["statusCode"] == 400
    assert "partitions[0] is not below RELAY_PARTITIONS (16)" in body_of(response)["error"]
    assert nudge_relay.relay is None


def test_a_timer_event_to_the_http_handler_still_drains_everything(
    db: firestore.Client, settings: Settings, receiver: Receiver, nudge_relay: RelayFunction
) -> None:
    events = add_orders(db, settings, 4)

    summary = nudge_relay.http_handler(TIMER_EVENT, fc_context())

    assert summary["status"] == "ok" and summary["processed"] == 4, summary
    assert "statusCode" not in summary and summary["trigger"] == "relay-timer"
    assert {outbox(db, settings)[e]["status"] for e in events} == {"PROCESSED"}


def test_this_repositorys_entry_point_re_exports_the_http_handler() -> None:
    from firestore_outbox import function_compute
    from function_compute import relay_handler

    assert relay_handler.http_handler is function_compute.http_handler
