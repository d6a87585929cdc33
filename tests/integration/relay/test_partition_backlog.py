"""A backlog is delivered from its first page: nothing that counts it comes first, and the
first claim reads its partitions' pages while it claims them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.example import NewOrder
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.raw import intercept
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import PARTITION, partition_of
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox

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


class Gate(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Lets a client's first call (the survey) through, then holds every call until `width`
    are held at once (`opened`), or until `patience` seconds passed with fewer (`timed_out`:
    the calls came one after another); from then on every call goes through."""

    def __init__(self, width: int, patience: float = 15.0) -> None:
        self.width, self.patience = width, patience
        self.calls = self.held = self.most = 0
        self.opened = self.timed_out = False
        self._changed = threading.Condition()

    def _wait(self) -> None:
        with self._changed:
            self.calls += 1
            if self.calls == 1 or self.opened or self.timed_out:
                return
            self.held += 1
            self.most = max(self.most, self.held)
            if self.held >= self.width:
                self.opened = True
                self._changed.notify_all()
            elif not self._changed.wait_for(lambda: self.opened, self.patience):
                self.timed_out = True
                self._changed.notify_all()
            self.held -= 1

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        self._wait()
        return continuation(details, request)

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        self._wait()
        return continuation(details, request)


def test_the_first_claim_reads_its_pages_the_leases_and_the_mode_record_at_once(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After its survey, a run that had read, then claimed, then read its pages needed a
    # round trip for each before its first publish: every call after the survey is held
    # here until three are in flight at once (the lease-mode record's write, the claim's
    # lease read and at least one page), which a run that asks one thing at a time never has.
    monkeypatch.setenv("RELAY_PARTITIONS", str(PARTITIONS))
    event_ids = add_orders(db, settings, 40)
    relay_db = get_db_client(settings)
    gate = Gate(width=3)
    intercept(relay_db, gate)
    summary = make_relay(relay_db, settings, receiver.url, partitions=PARTITIONS).run()
    assert gate.opened and not gate.timed_out, (gate.most, gate.calls)
    assert summary["processed"] == 40, summary
    assert sorted(r.event_id for r in receiver.received) == event_ids
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_the_first_claim_publishes_from_the_first_page_in_not_the_slowest(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two partitions, an event or two in each: the survey sees every one, so the first claim
    # names both. Partition 0's first page is held until the downstream has a delivery: a
    # claim that waited for every page never publishes (the hold gives up after 20 s).
    monkeypatch.setenv("RELAY_PARTITIONS", "2")
    items = [{"productId": "sku-1", "quantity": 1}]
    keys = {partition_of(str(NewOrder.parse("c", items, k).order_id), 2): k for k in "abcdefgh"}
    for key in (keys[0], keys[1]):
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order("c", items, uow, idempotency_key=key)
    events = outbox(db, settings)
    assert {e[PARTITION] for e in events.values()} == {0, 1}
    relay = make_relay(db, settings, receiver.url, partitions=2)
    run_at, held_back = relay.store.run_at, []

    def slow_page_of_partition_0(query: Any) -> Any:
        found, read_at = run_at(query)
        if found and {d.get(PARTITION) for d in found} == {0} and not held_back:
            held_back.append(bool(receiver.wait_for(1, timeout=20)))
        return found, read_at

    monkeypatch.setattr(relay.store, "run_at", slow_page_of_partition_0)
    summary = relay.run()
    assert held_back == [True], "nothing was published while partition 0's page was held"
    assert summary["processed"] == len(events), summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
