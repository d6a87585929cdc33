"""The order API through real HTTP: `outbox api` as a process, the emulator behind it."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.api_servers import ApiProcess, api_server

pytestmark = pytest.mark.emulator

ORDER = {"customerId": "c-1", "items": [{"productId": "sku-1", "quantity": 2}]}
OTHER = {"customerId": "c-1", "items": [{"productId": "sku-1", "quantity": 3}]}


@pytest.fixture(scope="module")
def module_settings(emulator_host: str) -> Settings:
    return Settings(project_id="outbox-test", emulator_host=emulator_host)


@pytest.fixture(scope="module")
def api(module_settings: Settings) -> Iterator[ApiProcess]:
    with api_server(module_settings) as server:
        yield server


def post(url: str, body: object, key: str | None, **headers: str) -> requests.Response:
    if key is not None:
        headers["Idempotency-Key"] = key
    return requests.post(f"{url}/orders", json=body, headers=headers, timeout=30)


def counts(db: firestore.Client) -> tuple[int, int, int]:
    return tuple(  # type: ignore[return-value]
        len(list(db.collection(name).stream())) for name in ("orders", "outbox", "idempotency_keys")
    )


def test_first_request_answers_201_and_a_repeat_replays_it_byte_for_byte(
    api: ApiProcess, db: firestore.Client, unique: str
) -> None:
    first = post(api.url, ORDER, f'"{unique}"')
    assert first.status_code == 201, first.text
    created = first.json()
    assert set(created) == {"orderId", "eventId"}
    assert first.headers["Location"] == f"/orders/{created['orderId']}"
    assert "Idempotent-Replayed" not in first.headers
    event = db.collection("outbox").document(created["eventId"]).get().to_dict()
    assert event["aggregateId"] == created["orderId"] and event["status"] == "PENDING"

    again = post(api.url, {"items": ORDER["items"], "customerId": "c-1"}, f'"{unique}"')
    assert again.status_code == 201
    assert again.content == first.content
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["Location"] == first.headers["Location"]
    assert counts(db) == (1, 1, 1)


@pytest.mark.parametrize(
    "header",
    [
        "two tokens",  # neither quoted nor one bare token
        "token;p=1",
        '"unterminated',
        '""',
        '"' + "k" * 256 + '"',
        '"bad \\n escape"',
        '"two" "strings"',
    ],
)
def test_a_malformed_key_is_400_problem_and_nothing_is_written(
    api: ApiProcess, db: firestore.Client, header: str
) -> None:
    answer = post(api.url, ORDER, header)
    assert answer.status_code == 400
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.json()["type"] == "/problems/idempotency-key-invalid"
    assert counts(db) == (0, 0, 0)


def test_a_bare_key_is_the_same_key_as_its_quoted_form(
    api: ApiProcess, db: firestore.Client
) -> None:
    bare = str(uuid.uuid4())  # what Stripe-style client libraries send
    first = post(api.url, ORDER, bare)
    assert first.status_code == 201, first.text
    quoted = post(api.url, ORDER, f'"{bare}"')
    assert quoted.status_code == 201
    assert quoted.headers["Idempotent-Replayed"] == "true"
    assert quoted.content == first.content
    assert post(api.url, OTHER, bare).status_code == 422
    assert counts(db) == (1, 1, 1)


def test_a_key_of_255_characters_is_accepted(api: ApiProcess, db: firestore.Client) -> None:
    assert post(api.url, ORDER, '"' + "k" * 255 + '"').status_code == 201


def test_a_missing_key_is_400_problem(api: ApiProcess, db: firestore.Client) -> None:
    answer = post(api.url, ORDER, None)
    assert answer.status_code == 400
    assert answer.json() == {
        "type": "/problems/idempotency-key-missing",
        "title": "Idempotency-Key missing",
        "status": 400,
        "detail": "POST /orders requires an Idempotency-Key header",
    }
    assert counts(db) == (0, 0, 0)


def test_the_same_key_with_another_request_is_422(
    api: ApiProcess, db: firestore.Client, unique: str
) -> None:
    assert post(api.url, ORDER, f'"{unique}"').status_code == 201
    reused = post(api.url, OTHER, f'"{unique}"')
    assert reused.status_code == 422
    assert reused.headers["Content-Type"] == "application/problem+json"
    assert reused.json()["type"] == "/problems/idempotency-key-reused"
    assert counts(db) == (1, 1, 1)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "/problems/invalid-json"),
        (
            b'{"customerId": "\\ud800", "items": [{"productId": "s", "quantity": 1}]}',
            "/problems/invalid-order",  # valid JSON, but the id has no UTF-8 form
        ),
    ],
    ids=["nested-past-the-parser", "lone-surrogate"],
)
def test_json_the_order_api_cannot_use_is_400_not_500(
    api: ApiProcess, db: firestore.Client, unique: str, body: bytes, problem: str
) -> None:
    headers = {"Content-Type": "application/json", "Idempotency-Key": f'"{unique}"'}
    answer = requests.post(f"{api.url}/orders", data=body, headers=headers, timeout=30)
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] == problem
    assert counts(db) == (0, 0, 0)  # the key was released: a corrected retry runs
    assert post(api.url, ORDER, f'"{unique}"').status_code == 201


def test_validation_failures_are_not_stored_so_a_corrected_retry_runs(
    api: ApiProcess, db: firestore.Client, unique: str
) -> None:
    key = f'"{unique}"'
    bad = post(api.url, {"customerId": "c-1", "items": []}, key)
    assert bad.status_code == 400
    assert bad.json()["detail"] == "items must not be empty"
    assert counts(db) == (0, 0, 0)  # the lock was released
    wrong_type = requests.post(
        f"{api.url}/orders", data="x", headers={"Idempotency-Key": key}, timeout=30
    )
    assert wrong_type.status_code == 415
    assert post(api.url, ORDER, key).status_code == 201


def test_keys_are_scoped_by_tenant(api: ApiProcess, db: firestore.Client, unique: str) -> None:
    key = f'"{unique}"'
    a = post(api.url, ORDER, key, **{"X-Tenant-Id": "tenant-a"})
    b = post(api.url, OTHER, key, **{"X-Tenant-Id": "tenant-b"})
    assert (a.status_code, b.status_code) == (201, 201)
    assert a.json()["orderId"] != b.json()["orderId"]
    again = post(api.url, ORDER, key, **{"X-Tenant-Id": "tenant-a"})
    assert again.content == a.content and again.headers["Idempotent-Replayed"] == "true"
    assert counts(db) == (2, 2, 2)


def test_concurrent_identical_requests_make_one_order_and_one_event(
    api: ApiProcess, db: firestore.Client, unique: str
) -> None:
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda _: post(api.url, ORDER, f'"{unique}"'), range(12)))
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {201, 409}, statuses
    firsts = [a for a in answers if a.status_code == 201 and "Idempotent-Replayed" not in a.headers]
    assert len(firsts) == 1
    for answer in answers:
        if answer.status_code == 201:
            assert answer.content == firsts[0].content
        else:
            assert answer.headers["Retry-After"] == "1"
            assert answer.json()["type"] == "/problems/request-in-progress"
    assert counts(db) == (1, 1, 1)


def test_get_order_and_healthz(api: ApiProcess, db: firestore.Client, unique: str) -> None:
    created = post(api.url, ORDER, f'"{unique}"').json()
    found = requests.get(f"{api.url}/orders/{created['orderId']}", timeout=30)
    assert found.status_code == 200
    order = found.json()
    assert (order["orderId"], order["customerId"], order["items"], order["status"]) == (
        created["orderId"],
        "c-1",
        ORDER["items"],
        "CREATED",
    )
    missing = requests.get(f"{api.url}/orders/nope", timeout=30)
    assert missing.status_code == 404
    assert missing.headers["Content-Type"] == "application/problem+json"
    health = requests.get(f"{api.url}/healthz", timeout=30)
    assert health.status_code == 200 and health.json() == {"status": "ok"}


def test_a_key_is_reusable_after_it_expires(
    settings: Settings, db: firestore.Client, unique: str
) -> None:
    variables = {"IDEMPOTENCY_TTL_SECONDS": "2", "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS": "1"}
    with api_server(settings, **variables) as server:
        first = post(server.url, ORDER, f'"{unique}"')
        assert post(server.url, OTHER, f'"{unique}"').status_code == 422  # not expired yet
        record = db.collection("idempotency_keys").get()[0].to_dict()
        assert record["status"] == "COMPLETED"
        time.sleep(2.5)
        later = post(server.url, OTHER, f'"{unique}"')
    assert later.status_code == 201 and "Idempotent-Replayed" not in later.headers
    assert later.json()["orderId"] != first.json()["orderId"]
    assert counts(db) == (2, 2, 1)


def test_problem_bodies_are_json(api: ApiProcess, db: firestore.Client) -> None:
    answer = requests.post(f"{api.url}/nowhere", timeout=30)
    assert answer.status_code == 404
    assert json.loads(answer.content)["status"] == 404


def test_answers_are_encrypted_at_rest_and_a_wrong_key_cannot_replay_them(
    settings: Settings, db: firestore.Client, unique: str
) -> None:
    old = "k1:" + base64.b64encode(b"1" * 32).decode()
    new = "k2:" + base64.b64encode(b"2" * 32).decode()
    key = f'"{unique}"'
    with api_server(settings, IDEMPOTENCY_ENCRYPTION_KEYS=old) as server:
        first = post(server.url, ORDER, key)
        assert first.status_code == 201
        again = post(server.url, ORDER, key)
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    [record] = [d.to_dict() for d in db.collection("idempotency_keys").stream()]
    response = record["response"]
    assert response["body"] is None and response["sealed"]["keyId"] == "k1"
    assert first.json()["orderId"].encode() not in response["sealed"]["ciphertext"]
    with api_server(settings, IDEMPOTENCY_ENCRYPTION_KEYS=f"{new},{old}") as rotated:
        assert post(rotated.url, ORDER, key).content == first.content
    with api_server(settings, IDEMPOTENCY_ENCRYPTION_KEYS=new) as wrong:
        refused = post(wrong.url, ORDER, key)
    assert refused.status_code == 500
    assert refused.json()["type"] == "/problems/answer-unreadable"
    assert first.json()["orderId"] not in refused.text
    assert counts(db) == (1, 1, 1)  # not done again
