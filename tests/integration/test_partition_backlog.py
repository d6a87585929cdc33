"""A backlog is delivered from its first page: nothing that counts it comes first."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.config.settings import Settings
from firestore_outbox.consumer.receiver import Receiver
from tests.helpers import add_orders, add_raw_event, make_relay, outbox

PARTITIONS = 4  # a survey reads 2 x 4 events: 40 open ones are a backlog


def test_a_backlog_is_delivered_while_every_count_is_held(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", str(PARTITIONS))  # the writers agree with the relay
    event_ids = add_orders(db, settings, 40)
    relay = make_relay(db, settings, receiver.url, partitions=PARTITIONS)
    # Every aggregation waits until a delivery was seen: one that came first blocks the run.
    delivered, count_at = threading.Event(), relay.store.count_at

    def held_count(*args: Any, **kwargs: Any) -> Any:
        delivered.wait(60)
        return count_at(*args, **kwargs)

    monkeypatch.setattr(relay.store, "count_at", held_count)
    summaries: list[dict[str, Any]] = []
    run = threading.Thread(target=lambda: summaries.append(relay.run()))
    run.start()
    first = receiver.wait_for(1, timeout=30)
    delivered.set()
    run.join()
    assert first, "no delivery while the counts were held"
    assert summaries[0]["processed"] == 40, summaries
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    assert sorted(r.event_id for r in receiver.received) == event_ids


def test_events_without_a_partition_that_the_survey_did_not_read_are_healed_beside_the_drain(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", str(PARTITIONS))
    add_orders(db, settings, 40)
    # Written by another producer, with ids after every other: the survey's read misses them.
    for n in range(3):
        add_raw_event(db, settings, f"zz-foreign-{n}")
    relay = make_relay(db, settings, receiver.url, partitions=PARTITIONS)
    first = relay.run()
    assert (first["unscheduled"], first["healed"]) == (3, 3), first
    second = relay.run()  # (healed into partitions the first run may have passed already)
    assert first["processed"] + second["processed"] == 43
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
