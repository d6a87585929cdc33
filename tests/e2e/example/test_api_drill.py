"""The drill through a real `outbox api` process: 40 clients, keys reused with other bodies."""

from __future__ import annotations

import json
import uuid

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.api_drill import run_drill
from tests.support.api_servers import api_server

pytestmark = pytest.mark.emulator


def test_drill_every_answer_is_201_409_or_422_and_each_key_made_one_order(
    settings: Settings, db: firestore.Client
) -> None:
    run_id = uuid.uuid4().hex[:8]
    with api_server(settings) as server:
        run = run_drill(server.url, run_id, clients=40, iterations=6)
    assert set(run.statuses) <= {201, 409, 422}, run.statuses
    assert run.replays_differing == 0
    assert all(len(bodies) == 1 for bodies in run.created.values())  # replays identical
    assert len(run.created) == 40 * 2  # every key was accepted once
    orders = {d.id: d.to_dict() for d in db.collection("orders").stream()}
    events = [d.to_dict() for d in db.collection("outbox").stream()]
    assert len(orders) == len(run.created)
    assert sorted(e["aggregateId"] for e in events) == sorted(orders)
    answered = {json.loads(body)["orderId"] for bodies in run.created.values() for body in bodies}
    assert answered == set(orders)
