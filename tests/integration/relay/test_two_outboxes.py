"""Two outboxes in one database share nothing: with different `OUTBOX_COLLECTION`s, their
relays, watchdogs and re-drive jobs side by side write only collections named after their own
outbox, and one outbox's stalled relay is reported by its watchdog while the other's runs.

Before 0.7 both wrote their partition leases and lease-mode records to `outbox_partitions`
and their heartbeats to `outbox_health`: the running relay's heartbeat hid the stalled one."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator

import pytest
from google.cloud import firestore

from firestore_outbox import Configuration, FirestoreUnitOfWork, Relay
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.service import Redrive
from firestore_outbox.redrive.targets import target_for

NAMES = ("billing", "shipping")


@pytest.fixture
def receivers() -> Iterator[dict[str, Receiver]]:
    with Receiver() as billing, Receiver() as shipping:
        yield {"billing": billing, "shipping": shipping}


def configuration(settings: Settings, name: str, url: str) -> Configuration:
    """One outbox's deployment: its own OUTBOX_COLLECTION, nothing else named."""
    return Configuration.load(
        {
            "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
            "FIRESTORE_PROJECT_ID": str(settings.project_id),
            "OUTBOX_COLLECTION": f"{name}_outbox",
            "ORDERS_COLLECTION": f"{name}_orders",
            "DOWNSTREAM_SERVICE_URL": url,
        }
    )


def add_events(db: firestore.Client, config: Configuration, name: str, count: int) -> list[str]:
    with FirestoreUnitOfWork(db, config.settings, nudger=False) as uow:
        for n in range(count):
            uow.outbox.add(
                {
                    "eventId": f"{name}-event-{n}",
                    "eventType": "Invoiced" if name == "billing" else "Shipped",
                    "aggregateType": name,
                    "aggregateId": f"{name}-{n % 2}",
                    "payload": {"n": n},
                }
            )
    return [f"{name}-event-{n}" for n in range(count)]


def codes(config: Configuration, db: firestore.Client) -> set[str]:
    return {p.code.value for p in make_watchdog(config, db).check().health.problems}


def test_two_outboxes_side_by_side_share_no_collection_and_no_document(
    db: firestore.Client, settings: Settings, receivers: dict[str, Receiver]
) -> None:
    configs = {n: configuration(settings, n, receivers[n].url) for n in NAMES}
    assert configs["billing"].collections.names() == {
        "outbox": "billing_outbox",
        "partitions": "billing_outbox_partitions",
        "partition_modes": "billing_outbox_partitions_mode",
        "health": "billing_outbox_health",
        "redrive": "billing_outbox_redrive",
    }
    events = {n: add_events(db, configs[n], n, 4) for n in NAMES}
    relays = {n: Relay(db, c.settings, c.relay()) for n, c in configs.items()}
    for name, relay in relays.items():
        summary = relay.run(instance_id=f"{name}-relay")
        assert (summary["status"], summary["processed"]) == ("ok", 4), summary
        assert sorted(str(r.event_id) for r in receivers[name].received) == events[name]

    # Re-drive jobs side by side: each sends its own outbox's events again, and only them.
    for name, config in configs.items():
        service = Redrive(db, config.settings, config.relay())
        job = service.start(Selection(), target=target_for(None), rate=1000.0, created_by=name)
        assert service.run(job.job_id).sent == 4
        assert sorted(str(r.event_id) for r in receivers[name].received) == sorted(events[name] * 2)
    assert {n: codes(c, db) for n, c in configs.items()} == {"billing": set(), "shipping": set()}

    # Shipping's relay stops (its last heartbeat an hour old); billing's keeps running.
    health = db.collection(configs["shipping"].collections.health)
    an_hour_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)
    beats = [doc for doc in health.get() if doc.id.startswith("relay-")]
    assert beats
    for beat in beats:
        beat.reference.update({"at": an_hour_ago})
    add_events(db, configs["billing"], "billing-later", 1)
    assert relays["billing"].run(instance_id="billing-relay")["processed"] == 1
    assert codes(configs["billing"], db) == set()
    assert codes(configs["shipping"], db) == {"relay_stopped"}
    incidents = health.document("watchdog").get().to_dict()
    assert set(incidents["incidents"]) == {"relay_stopped"}
    billing_health = db.collection(configs["billing"].collections.health)
    assert not billing_health.document("watchdog").get().exists  # no incident, ever

    # Every collection of the project is one outbox's, and holds nothing of the other's.
    owned = {n: set(c.collections.names().values()) for n, c in configs.items()}
    assert owned["billing"].isdisjoint(owned["shipping"])
    written = {c.id for c in db.collections()}
    assert written == owned["billing"] | owned["shipping"]
    for name, other in (NAMES, NAMES[::-1]):
        for collection in owned[name]:
            for doc in db.collection(collection).get():
                text = doc.id + json.dumps(doc.to_dict(), default=str)
                assert other not in text, (collection, doc.id, text)
