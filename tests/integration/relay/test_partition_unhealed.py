"""Events with only the contract's fields (another producer's) are delivered by the partition
their aggregate belongs in and healed by their settle: one write each, in commit order with
the events the project writes itself, however many a scan takes."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from google.cloud import firestore

from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.cas import Change
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import partition_of
from firestore_outbox.relay.read import survey
from tests.support.helpers import add_raw_event, make_relay, outbox
from tests.support.ordering import Sequences

CONTRACT = {"nextAttemptAt": firestore.DELETE_FIELD, "processingInstanceId": firestore.DELETE_FIELD}


def add_mixed(db: firestore.Client, settings: Settings, steps: int) -> list[str]:
    """Aggregates a, b, c, each numbered from 0: even steps written with the contract's
    fields only (no partition, sequence or nextAttemptAt), odd ones by the unit of work;
    one commit each, so commit order is the order written. The contract-shape ids."""
    contract = []
    for seq in range(steps):
        for agg in ("a", "b", "c"):
            payload = {"aggregate": agg, "seq": seq}
            if seq % 2 == 0:
                event_id = f"{agg}-{seq}"
                add_raw_event(db, settings, event_id, aggregateId=agg, payload=payload)
                db.collection(settings.outbox_collection).document(event_id).update(CONTRACT)
                contract.append(event_id)
            else:
                with FirestoreUnitOfWork(db, settings) as uow:
                    event = {"eventType": "Step", "aggregateType": "agg", "aggregateId": agg}
                    uow.outbox.add({**event, "payload": payload})
    return contract


def record_writes(relay: Any, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many writes each event document got from the relay (its lease documents apart)."""
    writes: Counter[str] = Counter()
    write = relay.store.write

    def counted(changes: Sequence[Change]) -> Any:
        writes.update(change.ref.id for change in changes)
        return write(changes)

    monkeypatch.setattr(relay.store, "write", counted)
    return writes


def test_contract_shape_events_are_healed_by_their_settle_in_commit_order(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = add_mixed(db, settings, 6)
    assert all("partition" not in outbox(db, settings)[e] for e in contract)
    downstream = Sequences(0.0, random.Random(1))
    receiver.respond = downstream
    relay = make_relay(db, settings, receiver.url)
    writes = record_writes(relay, monkeypatch)

    summary = relay.run()

    assert summary["processed"] == 18 and summary["healed"] == 9, summary
    assert downstream.accepted == {agg: list(range(6)) for agg in ("a", "b", "c")}
    assert downstream.violations == 0
    events = outbox(db, settings)
    assert {e["status"] for e in events.values()} == {"PROCESSED"}
    assert all(e["partition"] == partition_of(e["aggregateId"], 16) for e in events.values())
    assert all(events[e]["sequence"] == 0 for e in contract)
    assert {writes[e] for e in contract} == {1}  # its settle, and no heal write before it


def test_more_events_without_a_partition_than_a_scan_takes_are_all_delivered_in_one_run(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(survey, "UNHEALED_SCAN_LIMIT", 4)  # 12 events: three scans or more
    for n in range(12):
        add_raw_event(db, settings, f"foreign-{n:02d}")
        db.collection(settings.outbox_collection).document(f"foreign-{n:02d}").update(CONTRACT)

    summary = make_relay(db, settings, receiver.url).run()

    assert (summary["processed"], summary["healed"]) == (12, 12), summary
    assert summary["stoppedBy"] == "drained"
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_with_per_event_leases_the_lease_write_gives_such_an_event_its_partition(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    contract = add_mixed(db, settings, 2)  # a-0, b-0, c-0 without a partition
    relay = make_relay(db, settings, receiver.url, leases="event", ordering="none")
    writes = record_writes(relay, monkeypatch)

    summary = relay.run()

    assert summary["processed"] == 6, summary
    events = outbox(db, settings)
    for event_id in contract:  # as the partition-led queries of `outbox status` need it
        event = events[event_id]
        assert (event["partition"], event["sequence"]) == (
            partition_of(event["aggregateId"], 16),
            0,
        )
    assert {writes[e] for e in contract} == {2}  # the lease (which healed it) and the settle
