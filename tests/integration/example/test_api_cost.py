"""What the front door costs in Firestore calls: one extra round trip on a first request."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from app.api import make_api, make_orders_app
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency import IdempotencyConfig
from firestore_outbox.testing.metering import meter

pytestmark = pytest.mark.emulator

BODY = json.dumps({"customerId": "c-1", "items": [{"productId": "s", "quantity": 1}]}).encode()


def request(app: Any, key: str | None) -> str:
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/orders",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(BODY)),
        "wsgi.input": io.BytesIO(BODY),
    }
    if key is not None:
        environ["HTTP_IDEMPOTENCY_KEY"] = key
    status: list[str] = []
    b"".join(app(environ, lambda s, h, e=None: status.append(s)))
    return status[0]


def test_a_first_request_costs_one_round_trip_more_than_the_bare_endpoint(
    settings: Settings,
) -> None:
    bare_db, guarded_db = get_db_client(settings), get_db_client(settings)
    bare_calls, guarded_calls = meter(bare_db), meter(guarded_db)
    assert request(make_orders_app(bare_db, settings), None) == "201 Created"
    guarded = make_api(guarded_db, settings, IdempotencyConfig())
    assert request(guarded, '"cost-1"') == "201 Created"
    assert bare_calls.snapshot() == {"rpc:Commit": 1, "writes": 2}
    # The lock's create, then the business batch carrying the key's completion.
    assert guarded_calls.snapshot() == {"rpc:Commit": 2, "writes": 4}

    guarded_calls.reset()
    assert request(guarded, '"cost-1"') == "201 Created"
    # A replay: the create that finds the key, one read of it, no commit of the business.
    assert guarded_calls.snapshot() == {
        "rpc:Commit": 1,
        "writes": 1,
        "rpc:BatchGetDocuments": 1,
        "reads": 1,
    }
