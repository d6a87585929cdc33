"""`firestore.rules` loaded into the emulator (`--rules`): client SDKs and unauthenticated REST
calls can neither read nor write the outbox, inbox, orders or idempotency keys; the server
client still can."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from google.cloud import firestore

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops import plan_requeue, requeue
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.conftest import PROJECT
from tests.support.helpers import add_raw_event, outbox

RULES = Path(__file__).resolve().parents[3] / "firestore.rules"
# outbox_health (the heartbeat, the watchdog's incidents): denied by the catch-all rule.
COLLECTIONS = ("outbox", "inbox", "orders", "idempotency_keys", "outbox_health")


@pytest.fixture(scope="module")
def ruled() -> Iterator[str]:
    """An emulator of its own that enforces firestore.rules."""
    with FirestoreEmulator(rules=RULES) as emulator:
        yield emulator.host_port


def rest(host_port: str, path: str) -> str:
    return f"http://{host_port}/v1/projects/{PROJECT}/databases/(default)/documents/{path}"


def signed_in_user_token() -> str:
    """A Firebase Auth ID token as the emulator accepts it (unsigned): a signed-in user."""
    now = int(time.time())
    claims = {
        "iss": f"https://securetoken.google.com/{PROJECT}",
        "aud": PROJECT,
        "sub": "user-1",
        "user_id": "user-1",
        "iat": now,
        "auth_time": now,
        "exp": now + 3600,
        "firebase": {"sign_in_provider": "password"},
    }
    parts = [{"alg": "none", "typ": "JWT"}, claims]
    encoded = [base64.urlsafe_b64encode(json.dumps(p).encode()).rstrip(b"=") for p in parts]
    return b".".join([*encoded, b""]).decode()


def client_requests(host_port: str, collection: str) -> dict[str, requests.Response]:
    """What a client SDK or anyone with the URL would send: no credentials, or a user's."""
    url = rest(host_port, f"{collection}/e-1")
    body = {"fields": {"status": {"stringValue": "PROCESSED"}}}
    user = {"Authorization": f"Bearer {signed_in_user_token()}"}
    return {
        "read": requests.get(url, timeout=10),
        "list": requests.get(rest(host_port, collection), timeout=10),
        "write": requests.patch(url, json=body, timeout=10),
        "create": requests.post(rest(host_port, collection), json=body, timeout=10),
        "delete": requests.delete(url, timeout=10),
        "read as a user": requests.get(url, headers=user, timeout=10),
    }


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_clients_are_denied_while_the_server_client_works(ruled: str, collection: str) -> None:
    settings = Settings(project_id=PROJECT, emulator_host=ruled)
    db = get_db_client(settings)
    db.collection(collection).document("e-1").set({"status": "PENDING"})

    answers = client_requests(ruled, collection)

    for what, response in answers.items():
        assert response.status_code == 403, (what, response.status_code, response.text)
        assert "PERMISSION_DENIED" in response.text, what
    # Nothing the clients sent got through, and the server client reads and writes as ever.
    assert db.collection(collection).document("e-1").get().to_dict() == {"status": "PENDING"}
    db.collection(collection).document("e-1").update({"status": "PROCESSED"})
    assert [d.id for d in db.collection(collection).get()] == ["e-1"]


def test_the_relay_and_the_cli_work_under_the_rules(ruled: str) -> None:
    settings = Settings(project_id=PROJECT, emulator_host=ruled)
    db = get_db_client(settings)
    add_raw_event(db, settings, "ruled-1", status="FAILED", lastError="x")
    done, _ = requeue(db, "outbox", plan_requeue(db, "outbox", event_ids=["ruled-1"]))
    assert done == 1 and outbox(db, settings)["ruled-1"]["status"] == "PENDING"


def test_without_the_rules_the_same_requests_succeed(
    settings: Settings, db: firestore.Client
) -> None:
    """The control: the denials above come from the rules, not from the requests."""
    db.collection("outbox").document("e-1").set({"status": "PENDING"})
    answers = client_requests(str(settings.emulator_host), "outbox")
    assert {what: r.status_code for what, r in answers.items()} == {
        "read": 200,
        "list": 200,
        "write": 200,
        "create": 200,
        "delete": 200,
        "read as a user": 404,  # the token is accepted; e-1 was deleted just before
    }
