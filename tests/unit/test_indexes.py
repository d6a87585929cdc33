"""`firestore.indexes.json` holds a composite index for every query the relay and the `outbox`
command make. The queries are the real ones: each operation runs with the client's query
methods replaced by recorders that answer "nothing found", so no query can be left out."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud.firestore import FieldFilter
from google.cloud.firestore_v1.aggregation import AggregationQuery
from google.cloud.firestore_v1.client import Client
from google.cloud.firestore_v1.query import Query

from firestore_outbox.config.settings import Settings
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.raw import QueryResult
from firestore_outbox.ops import find_anomalies, plan_requeue, read_status, requeue
from firestore_outbox.ops.held import list_held, release_held
from firestore_outbox.ops.purge import backfill_expiry, count_processed, purge_processed
from firestore_outbox.relay import store as leases
from firestore_outbox.relay.partitioned.scan import count_unpartitioned, held_events, open_events
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.unscheduled import count_unscheduled, scan_query

ROOT = Path(__file__).resolve().parents[2]
NOW = dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc)


def record_queries(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    made: list[Any] = []

    def get(query: Any, *_: Any, **__: Any) -> list[Any]:
        made.append(query)
        return []

    def count(aggregation: Any, *_: Any, **__: Any) -> list[list[Any]]:
        made.append(aggregation._nested_query)
        return [[SimpleNamespace(alias="n", value=0, read_time=None)]]

    monkeypatch.setattr(Query, "get", get)
    monkeypatch.setattr(leases, "run_query", lambda db, query, **_: QueryResult(get(query), None))
    monkeypatch.setattr(AggregationQuery, "get", count)
    monkeypatch.setattr(Client, "get_all", lambda *a, **k: iter(()))
    return made


def queries_of(monkeypatch: pytest.MonkeyPatch, operation: str) -> list[Any]:
    made = record_queries(monkeypatch)
    db = get_db_client(Settings(emulator_host="127.0.0.1:9"))
    if operation == "partitioned relay":
        store = LeaseStore(db, "outbox", timeout=1)
        count_unpartitioned(store, 16)  # what is healed: no partition yet, so no lead with it
        made.append(open_events(store, 3, 10, None))
        # The partitions that have open events, when there are few: no order, no composite.
        pending = FieldFilter("status", "in", ["PENDING"])
        made.append(store.collection.where(filter=pending).select(["partition"]))
        made.append(held_events(store, 3, 10))
        made.append(store.newest_query(10))  # what its follow mode listens to
    elif operation == "held":
        list_held(db, "outbox")
        release_held(db, "outbox", "order-1")
    elif operation == "relay":
        store = LeaseStore(db, "outbox", timeout=1)
        store.pending(NOW, 10)
        store.abandoned(NOW, 10)
        made.append(store.window_query(10))  # what follow mode listens to
        count_unscheduled(store)
        made.append(scan_query(store))  # when the counts differ
    elif operation == "status":
        read_status(db, "outbox", now=NOW, lock_timeout_seconds=300)
    elif operation == "requeue":
        for plan in (plan_requeue(db, "outbox"), plan_requeue(db, "outbox", event_type="T")):
            requeue(db, "outbox", plan)
    elif operation == "purge":
        count_processed(db, "outbox", "<", NOW)
        purge_processed(db, "outbox", NOW)
        backfill_expiry(db, "outbox", NOW, 60)
    elif operation == "reconcile":
        find_anomalies(
            db, orders="orders", outbox="outbox", now=NOW, since=NOW, lock_timeout_seconds=300
        )
    return made


def needed_index(query: Any) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """The composite index a query needs: equality fields first, then the ordered (range)
    field. None when single-field indexes serve it (one field, or equalities only)."""
    proto = query._to_protobuf()
    where = proto.where
    filters = (
        [f.field_filter for f in where.composite_filter.filters]
        if where.composite_filter.filters
        else [where.field_filter]
        if where.field_filter.field.field_path
        else []
    )
    equalities = sorted(f.field.field_path for f in filters if f.op.name in ("EQUAL", "IN"))
    ordered = [
        (o.field.field_path, o.direction.name)
        for o in proto.order_by
        if o.field.field_path != "__name__"
    ]
    fields = [(name, "ASCENDING") for name in equalities] + ordered
    if not ordered or len({name for name, _ in fields}) < 2:
        return None
    return proto.from_[0].collection_id, tuple(fields)


def defined_indexes() -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    definitions = json.loads((ROOT / "firestore.indexes.json").read_text())
    return {
        (
            index["collectionGroup"],
            tuple((field["fieldPath"], field["order"]) for field in index["fields"]),
        )
        for index in definitions["indexes"]
        if index["queryScope"] == "COLLECTION"
    }


@pytest.mark.parametrize(
    ("operation", "composites"),
    [
        ("partitioned relay", 3),
        ("held", 0),
        ("relay", 2),
        ("status", 2),
        ("requeue", 0),
        ("purge", 1),
        ("reconcile", 2),
    ],
)
def test_every_query_has_its_composite_index(
    monkeypatch: pytest.MonkeyPatch, operation: str, composites: int
) -> None:
    queries = queries_of(monkeypatch, operation)
    assert queries, "the recorder saw no query"
    needed = {index for index in map(needed_index, queries) if index is not None}
    assert len(needed) == composites, needed
    for index in needed:
        assert index in defined_indexes(), f"no index for {index}"


def test_every_defined_index_is_used_by_some_query(monkeypatch: pytest.MonkeyPatch) -> None:
    used = set()
    for operation in ("partitioned relay", "relay", "status", "requeue", "purge", "reconcile"):
        with monkeypatch.context() as patch:
            used |= {needed_index(q) for q in queries_of(patch, operation)}
    assert defined_indexes() <= used


def test_the_partitioned_relay_s_delivery_queries_lead_with_the_partition() -> None:
    store = LeaseStore(get_db_client(Settings(emulator_host="127.0.0.1:9")), "outbox", timeout=1)
    index = needed_index(open_events(store, 3, 10, None))
    assert index is not None and index[1][0] == ("partition", "ASCENDING")
    assert needed_index(held_events(store, 3, 10)) is None  # equalities: single-field indexes


def test_the_ttl_field_large_fields_and_increasing_timestamps_are_exempt_from_indexing() -> None:
    overrides = json.loads((ROOT / "firestore.indexes.json").read_text())["fieldOverrides"]
    exempt = {(o["collectionGroup"], o["fieldPath"]) for o in overrides if o["indexes"] == []}
    assert {("outbox", "expireAt"), ("outbox", "payload")} <= exempt
    # Monotonically increasing: a single-field index on one caps the collection near 500
    # writes/s, and every query ordering by one of them has a composite index of its own.
    increasing = {"createdAt", "updatedAt", "nextAttemptAt", "processedAt"}
    assert {("outbox", name) for name in increasing} <= exempt
    assert [o["fieldPath"] for o in overrides if o.get("ttl")] == ["expireAt"]
