"""The order API (`outbox api`, a real server process) nudges the relay after each order's
commit when `OUTBOX_NUDGE` says so: here `http`, to a local endpoint that records it."""

from __future__ import annotations

import requests
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge.message import NUDGE_TYPE, nudged_partitions
from tests.support.api_servers import api_server


def test_the_order_api_nudges_the_relay_with_its_events_partition(
    settings: Settings, db: firestore.Client, unique: str
) -> None:
    with (
        Receiver(lambda _: ReceiverAnswer(202)) as relay,
        api_server(
            settings,
            OUTBOX_NUDGE="http",
            OUTBOX_NUDGE_URL=relay.url,
            OUTBOX_NUDGE_SECRET="nudge-secret-0123456789",
        ) as server,
    ):
        created = requests.post(
            f"{server.url}/orders",
            json={"customerId": "c-1", "items": [{"productId": "p-1", "quantity": 1}]},
            headers={"Idempotency-Key": f'"{unique}"'},
            timeout=30,
        )
        [nudge] = relay.wait_for(1, timeout=30)

    assert created.status_code == 201, created.text
    event = db.collection("outbox").document(created.json()["eventId"]).get().to_dict()
    assert nudge.json()["type"] == NUDGE_TYPE
    assert nudge.headers["webhook-signature"].startswith("v1,")  # signed, OUTBOX_NUDGE_SECRET
    assert nudged_partitions(nudge.json(), 16) == [event["partition"]]
