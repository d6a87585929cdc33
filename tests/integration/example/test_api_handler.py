"""The HTTP-triggered function: Function Compute 3.0's event in, its response struct out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.example import make_api
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute import HttpFunction
from function_compute import api_handler
from tests.support.fc3_http import http_event as event

pytestmark = pytest.mark.emulator

ORDER = {"customerId": "c-9", "items": [{"productId": "sku-9", "quantity": 1}]}


@pytest.fixture
def handler_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", str(settings.emulator_host))
    monkeypatch.setenv("FIRESTORE_PROJECT_ID", str(settings.project_id))
    # A fresh function per test (as a new instance would be): built on its first request.
    monkeypatch.setattr(api_handler, "handler", HttpFunction(make_api).handler)
    yield


def call(raw: bytes) -> dict[str, Any]:
    return api_handler.handler(raw, None)


def test_post_replay_and_get_through_the_http_trigger_event(
    handler_env: None, db: firestore.Client, unique: str
) -> None:
    body = json.dumps(ORDER).encode()
    first = call(event("POST", "/orders", body, **{"Idempotency-Key": f'"{unique}"'}))
    assert first["statusCode"] == 201 and first["isBase64Encoded"] is False
    created = json.loads(first["body"])
    assert first["headers"]["Location"] == f"/orders/{created['orderId']}"
    # The same request, its body base64-encoded as Function Compute sends binary bodies.
    again = call(event("POST", "/orders", body, binary=True, **{"idempotency-key": f'"{unique}"'}))
    assert again["statusCode"] == 201
    assert again["body"] == first["body"]
    assert again["headers"]["Idempotent-Replayed"] == "true"
    found = call(event("GET", f"/orders/{created['orderId']}"))
    assert found["statusCode"] == 200 and json.loads(found["body"])["customerId"] == "c-9"
    assert len(list(db.collection("orders").stream())) == 1


def test_a_missing_key_is_a_problem_response(handler_env: None, db: firestore.Client) -> None:
    answer = call(event("POST", "/orders", json.dumps(ORDER).encode()))
    assert answer["statusCode"] == 400
    assert answer["headers"]["Content-Type"] == "application/problem+json"
    assert json.loads(answer["body"])["type"] == "/problems/idempotency-key-missing"
    assert call(event("GET", "/healthz"))["statusCode"] == 200


def test_an_unconfigured_function_answers_503_without_detail(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(api_handler, "handler", HttpFunction(make_api).handler)
    monkeypatch.setenv("IDEMPOTENCY_TTL_SECONDS", "soon")
    answer = call(event("GET", "/healthz"))
    assert answer["statusCode"] == 503
    assert "soon" not in answer["body"]
