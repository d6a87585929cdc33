"""`Fc3Publisher` against a local server speaking Function Compute 3.0's InvokeFunction API,
which checks every signature with its own implementation (`tests/support/fc3_server.py`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.events import verify_event
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.fc.fc3 import Fc3Publisher, Fc3Target
from firestore_outbox.publishers.fc.settings import Fc3Settings
from firestore_outbox.publishers.settings import AccessKeySettings
from firestore_outbox.relay import Relay
from firestore_outbox.signing import Signer
from function_compute.relay_handler import handler
from tests.support.fc3_server import Fc3Endpoint, error
from tests.support.helpers import FAST, add_orders, as_function_environment, outbox, run_until

SECRET, TOKEN = "fc3-s3cret-key", "sts-t0ken"
FUNCTION = "on-order-created"
DELIVERY = Delivery("e-7", "OrderCreated", "/shop", "o-7", "2026-11-21T08:00:00Z", b'{"n":1}', 1)


@pytest.fixture
def fc3() -> Iterator[tuple[Fc3Endpoint, str]]:
    """The endpoint (keys: AKID) and its URL."""
    endpoint = Fc3Endpoint(keys={"AKID": SECRET}, functions={FUNCTION})
    with Receiver(endpoint) as server:
        yield endpoint, server.url.removesuffix("/events")


def publisher(url: str, **changes: Any) -> Fc3Publisher:
    target: dict[str, Any] = {
        "endpoint": url,
        "function": FUNCTION,
        "access_key_id": "AKID",
        "access_key_secret": SECRET,
        **changes,
    }
    return Fc3Publisher(Fc3Target(**target), connect_timeout=1, read_timeout=2)


def test_an_invocation_is_signed_asynchronous_and_carries_the_event_as_a_cloudevent(
    fc3: tuple[Fc3Endpoint, str],
) -> None:
    endpoint, url = fc3

    result = publisher(url, qualifier="prod").publish(DELIVERY)

    assert result.outcome is Outcome.DELIVERED, result
    [invocation] = endpoint.invocations.values()
    assert (invocation.function, invocation.qualifier, invocation.task_id) == (
        FUNCTION,
        "prod",
        "e_e-7",
    )
    event = json.loads(invocation.body)
    assert event == {
        "specversion": "1.0",
        "id": "e-7",
        "type": "OrderCreated",
        "source": "/shop",
        "subject": "o-7",
        "time": "2026-11-21T08:00:00Z",
        "datacontenttype": "application/json",
        "data": {"n": 1},
    }


def test_without_task_ids_an_invocation_names_none_and_function_compute_makes_one_up(
    fc3: tuple[Fc3Endpoint, str],
) -> None:
    endpoint, url = fc3
    invoker = publisher(url, task_ids=False)

    results = [invoker.publish(DELIVERY) for _ in range(2)]

    assert [r.outcome for r in results] == [Outcome.DELIVERED] * 2, results
    assert [i.task_id.startswith("fc-") for i in endpoint.invocations.values()] == [True, True]


def test_the_same_event_twice_is_refused_by_fc_as_a_duplicate_and_counts_as_delivered(
    fc3: tuple[Fc3Endpoint, str],
) -> None:
    endpoint, url = fc3
    fc = publisher(url)

    first, again = fc.publish(DELIVERY), fc.publish(DELIVERY)

    assert (first.outcome, again.outcome) == (Outcome.DELIVERED, Outcome.DELIVERED)
    assert list(endpoint.invocations) == ["e_e-7"]  # the function runs once
    assert endpoint.refused == ["AsyncTaskAlreadyExist"]


@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        (429, "ResourceExhausted", Outcome.RETRY),
        (503, "ResourceThrottled", Outcome.RETRY),
        (500, "InternalServerError", Outcome.RETRY),
        (403, "AccessDenied", Outcome.CHANNEL),
        (400, "RequestTimeTooSkewed", Outcome.CHANNEL),
        (404, "AliasNotFound", Outcome.CHANNEL),
        (400, "EntityTooLarge", Outcome.REJECTED),
        (413, "EntityTooLarge", Outcome.REJECTED),
        (400, "InvalidArgument", Outcome.REJECTED),
    ],
)
def test_each_class_of_error_is_classified_by_status_and_code(
    fc3: tuple[Fc3Endpoint, str], status: int, code: str, outcome: Outcome
) -> None:
    endpoint, url = fc3
    endpoint.script.append(error(status, code, "x" * 300))  # the code is read from an excerpt

    result = publisher(url).publish(DELIVERY)

    assert result.outcome is outcome
    assert result.error is not None and result.error.startswith(f"HTTP {status}")
    assert code in result.error


def test_a_function_that_does_not_exist_is_the_channels_fault(
    fc3: tuple[Fc3Endpoint, str],
) -> None:
    _, url = fc3

    result = publisher(url, function="no-such-function").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "FunctionNotFound" in result.error


def test_a_wrong_signature_is_refused_by_the_server_and_never_shows_the_secret(
    fc3: tuple[Fc3Endpoint, str],
) -> None:
    endpoint, url = fc3

    result = publisher(url, access_key_secret="wr0ng-s3cret").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert endpoint.refused == ["SignatureNotMatch"]
    assert not endpoint.invocations
    assert result.error is not None and "wr0ng-s3cret" not in result.error


def test_a_role_s_security_token_is_sent_signed_and_checked(fc3: tuple[Fc3Endpoint, str]) -> None:
    endpoint, url = fc3
    endpoint.security_token = TOKEN

    assert publisher(url).publish(DELIVERY).outcome is Outcome.CHANNEL  # no token sent
    assert publisher(url, security_token="expired").publish(DELIVERY).outcome is Outcome.CHANNEL
    result = publisher(url, security_token=TOKEN).publish(DELIVERY)

    assert result.outcome is Outcome.DELIVERED
    assert endpoint.refused == ["InvalidSecurityToken", "InvalidSecurityToken"]


def test_a_signed_event_verifies_as_a_structured_cloudevent(fc3: tuple[Fc3Endpoint, str]) -> None:
    endpoint, url = fc3
    secret = "a-signing-secret-of-some-length"
    fc = Fc3Publisher(
        Fc3Target(endpoint=url, function=FUNCTION, access_key_id="AKID", access_key_secret=SECRET),
        connect_timeout=1,
        read_timeout=2,
        signer=Signer([secret]),
    )

    assert fc.publish(DELIVERY).outcome is Outcome.DELIVERED

    [invocation] = endpoint.invocations.values()
    event = verify_event(invocation.body, [secret])
    assert event.attributes["id"] == "e-7"


@pytest.mark.emulator
def test_the_relay_delivers_through_fc3_and_an_answer_lost_after_fc_took_the_task_runs_once(
    fc3: tuple[Fc3Endpoint, str], db: firestore.Client, settings: Settings
) -> None:
    endpoint, url = fc3
    endpoint.answer_after = 1.0  # FC takes each task, its answer misses the 0.5 s read timeout
    event_ids = add_orders(db, settings, 5)
    key = AccessKeySettings(access_key_id="AKID", access_key_secret=SECRET)
    config = dataclasses.replace(
        FAST, publisher=Fc3Settings(endpoint=url, function=FUNCTION, access_key=key)
    )
    relay = Relay(db, settings, config)

    first = relay.run()
    endpoint.answer_after = 0.0
    run_until(relay, lambda: all(d["status"] == "PROCESSED" for d in outbox(db, settings).values()))

    assert first["retried"] == 5 and first["processed"] == 0, first
    assert sorted(json.loads(i.body)["id"] for i in endpoint.invocations.values()) == event_ids
    assert endpoint.refused == ["AsyncTaskAlreadyExist"] * 5  # each retry: a duplicate task
    assert {d["attempts"] for d in outbox(db, settings).values()} == {2}


@pytest.mark.emulator
def test_the_function_compute_handler_invokes_fc3_from_its_environment(
    fc3: tuple[Fc3Endpoint, str],
    db: firestore.Client,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    endpoint, url = fc3
    endpoint.security_token = TOKEN
    event_ids = add_orders(db, settings, 3)
    as_function_environment(
        monkeypatch,
        settings,
        tmp_path,
        RELAY_PUBLISHER="fc3",
        RELAY_FC_ENDPOINT=url,
        RELAY_FC_FUNCTION=FUNCTION,
        RELAY_FC_QUALIFIER="prod",
        ALIBABA_CLOUD_ACCESS_KEY_ID="AKID",
        ALIBABA_CLOUD_ACCESS_KEY_SECRET=SECRET,
        ALIBABA_CLOUD_SECURITY_TOKEN=TOKEN,
    )
    context = SimpleNamespace(request_id="req-fc3", function=SimpleNamespace(timeout=60))

    summary = handler(b"", context)

    assert summary["processed"] == 3, summary
    invocations = endpoint.invocations.values()
    assert sorted(json.loads(i.body)["id"] for i in invocations) == event_ids
    assert {i.qualifier for i in invocations} == {"prod"}
