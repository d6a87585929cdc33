"""The index files hold a composite index for every query the relay and the `outbox` command
make, and no composite index on the outbox leads with anything but the partition:

- `firestore.indexes.json` (every deployment): the partitioned relay's and the operations
  commands' queries, each of which needs a composite takes `partition` as its first filter;
- `firestore.indexes.event-leases.json` (deployments that run `RELAY_LEASES=event`): what
  only per-event leases need, led by `status`.

The queries are the real ones: each operation runs with the client's query methods replaced
by recorders that answer "nothing found", so no query can be left out; each recorded query
is read in its structured (protobuf) form."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.cloud.firestore import FieldFilter
from google.cloud.firestore_v1.aggregation import AggregationQuery
from google.cloud.firestore_v1.client import Client
from google.cloud.firestore_v1.query import Query

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.results import QueryResult
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.health.reading import Watched, read_health
from firestore_outbox.ops import find_anomalies, plan_requeue, read_status, requeue
from firestore_outbox.ops.held import list_held, release_held
from firestore_outbox.ops.history import read_recent
from firestore_outbox.ops.overview import read_overview
from firestore_outbox.ops.purge import backfill_expiry, count_processed, purge_processed
from firestore_outbox.redrive.jobs import JobStore
from firestore_outbox.redrive.selection import Selection, next_partition_query
from firestore_outbox.redrive.service import jobs_collection
from firestore_outbox.relay import store as leases
from firestore_outbox.relay.read.scan import count_unpartitioned, held_events, open_events
from firestore_outbox.relay.read.unhealed import find_unhealed
from firestore_outbox.relay.read.unscheduled import count_unscheduled, scan_query
from firestore_outbox.relay.store import LeaseStore

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "firestore.indexes.json"
EVENT_LEASES = ROOT / "firestore.indexes.event-leases.json"
NOW = dt.datetime(2026, 11, 21, tzinfo=dt.timezone.utc)
PARTITIONS = 40  # more than one `partition in` filter takes: every chunk's query is made
EVERY_PARTITION_MODE_OPERATION = (
    "partitioned relay",
    "held",
    "status",
    "watchdog",
    "overview",
    "requeue",
    "purge",
    "reconcile",
    "re-drive",
)

Index = tuple[str, tuple[tuple[str, str], ...]]


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
    monkeypatch.setenv("RELAY_PARTITIONS", str(PARTITIONS))  # what the commands read
    made = record_queries(monkeypatch)
    db = get_db_client(Settings(emulator_host="127.0.0.1:9"))
    store = LeaseStore(db, "outbox", timeout=1)
    if operation == "partitioned relay":
        count_unpartitioned(store, PARTITIONS)  # equalities per chunk: no composite
        find_unhealed(store, PARTITIONS, scan_limit=10)  # by name: no composite
        made.append(open_events(store, 3, 10, None))
        # The partitions that have open events, when there are few: no order, no composite.
        pending = FieldFilter("status", "in", ["PENDING"])
        made.append(store.collection.where(filter=pending).select(["partition"]))
        made.append(held_events(store, 3, 10))
        made.extend(store.newest_queries(10, PARTITIONS))  # what its follow mode listens to
    elif operation == "per-event relay":
        store.pending(NOW, 10)
        store.abandoned(NOW, 10)
        made.append(store.window_query(10))  # what follow mode listens to
        count_unscheduled(store)
        made.append(scan_query(store))  # when the counts differ
    elif operation == "held":
        list_held(db, "outbox")
        release_held(db, "outbox", "order-1")
    elif operation == "status":
        read_status(db, "outbox", now=NOW, lock_timeout_seconds=300, partitions=16)
    elif operation == "watchdog":
        watchdog_reading(db)
    elif operation == "overview":  # the console's: the watchdog's reading and the history too
        read_overview(db, "outbox", now=NOW, partitions=16)
        watchdog_reading(db)
        read_recent(db, "outbox", partitions=16, now=NOW)
    elif operation == "requeue":
        for plan in (plan_requeue(db, "outbox"), plan_requeue(db, "outbox", event_type="T")):
            requeue(db, "outbox", plan)
    elif operation == "purge":
        count_processed(db, "outbox", "<", NOW, 16)
        purge_processed(db, "outbox", NOW, partitions=16)
        backfill_expiry(db, "outbox", NOW, 60, partitions=16)
    elif operation == "re-drive":
        events = db.collection("outbox")
        for selection in (
            Selection(),
            Selection(since=NOW, until=NOW + dt.timedelta(days=1), statuses=("FAILED", "PENDING")),
            Selection(event_types=("OrderPaid",), aggregate_type="order"),
            Selection(event_types=("A", "B"), aggregate_id="order-1", since=NOW),
        ):
            made.append(selection.query(events, 3))
        made.append(next_partition_query(events, 3))  # the stored partitions: single-field
        jobs = JobStore(db, jobs_collection("outbox"), lease_seconds=300, timeout=10)
        made.append(jobs.collection.where(filter=FieldFilter("state", "==", "RUNNING")))
        made.append(jobs.collection.order_by("createdAt", direction="DESCENDING"))  # `recent`
    elif operation == "reconcile":
        find_anomalies(
            db,
            orders="orders",
            outbox="outbox",
            now=NOW,
            since=NOW,
            lock_timeout_seconds=300,
            partitions=16,
        )
    return made


def watchdog_reading(db: Any) -> None:
    watched = Watched("outbox", "outbox_health", "outbox_partitions", 16, 300)
    read_health(db, watched, window_seconds=900, timeout=5)


def filters_of(query: Any) -> list[Any]:
    where = query._to_protobuf().where
    if where.composite_filter.filters:
        return [f.field_filter for f in where.composite_filter.filters]
    return [where.field_filter] if where.field_filter.field.field_path else []


@dataclass(frozen=True)
class Needed:
    """What a query needs of a composite index: its equality fields (in the order of its
    filters), then the fields it orders by, each with its direction."""

    group: str
    equalities: tuple[str, ...]
    ordered: tuple[tuple[str, str], ...]

    @property
    def fields(self) -> tuple[tuple[str, str], ...]:
        return tuple((name, "ASCENDING") for name in self.equalities) + self.ordered

    def served_by(self, index: Index) -> bool:
        """Equality fields first in any order, then the ordered ones as they are."""
        group, fields = index
        k = len(self.equalities)
        return (
            group == self.group
            and len(fields) == len(self.fields)
            and {name for name, _ in fields[:k]} == set(self.equalities)
            and fields[k:] == self.ordered
        )


def needed_index(query: Any) -> Needed | None:
    """The composite index a query needs (a range field it does not order by explicitly,
    Firestore orders by implicitly, after the explicit ones). None when single-field
    indexes serve it: one field, equalities only, or document-name order only."""
    proto = query._to_protobuf()
    filters = filters_of(query)
    equalities: list[str] = []
    for f in filters:
        name = f.field.field_path
        if f.op.name in ("EQUAL", "IN") and name not in equalities:
            equalities.append(name)
    ordered = [
        (o.field.field_path, o.direction.name)
        for o in proto.order_by
        if o.field.field_path != "__name__"
    ]
    for f in filters:
        name = f.field.field_path
        if f.op.name not in ("EQUAL", "IN") and name not in dict(ordered):
            ordered.append((name, "ASCENDING"))
    found = Needed(proto.from_[0].collection_id, tuple(equalities), tuple(ordered))
    if not ordered or len({name for name, _ in found.fields}) < 2:
        return None
    return found


def needed(queries: list[Any]) -> set[Needed]:
    return {index for index in map(needed_index, queries) if index is not None}


def defined(path: Path) -> set[Index]:
    definitions = json.loads(path.read_text())
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
        ("partitioned relay", 2),
        ("held", 0),
        ("status", 2),
        ("watchdog", 2),
        ("overview", 4),
        ("requeue", 0),
        ("purge", 1),
        ("reconcile", 3),
        ("re-drive", 3),
    ],
)
def test_every_query_of_partition_leases_and_the_commands_has_its_index_in_the_shipped_file(
    monkeypatch: pytest.MonkeyPatch, operation: str, composites: int
) -> None:
    queries = queries_of(monkeypatch, operation)
    assert queries, "the recorder saw no query"
    wanted = needed(queries)
    assert len(wanted) == composites, wanted
    for index in wanted:
        assert any(map(index.served_by, defined(SHIPPED))), f"no index for {index}"
        # The partition is the query's first filter whenever it needs a composite.
        assert index.equalities[0] == "partition", index


def test_per_event_leases_find_their_indexes_in_their_own_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wanted = needed(queries_of(monkeypatch, "per-event relay"))
    assert len(wanted) == 2, wanted
    for index in wanted:
        assert any(map(index.served_by, defined(EVENT_LEASES))), f"no index for {index}"


def test_every_composite_index_shipped_leads_with_the_partition() -> None:
    shipped = defined(SHIPPED)
    assert shipped
    for group, fields in shipped:
        assert (group, fields[0]) == ("outbox", ("partition", "ASCENDING")), fields


def test_every_defined_index_is_used_by_some_query(monkeypatch: pytest.MonkeyPatch) -> None:
    used: dict[Path, set[Index]] = {SHIPPED: set(), EVENT_LEASES: set()}
    for operation in (*EVERY_PARTITION_MODE_OPERATION, "per-event relay"):
        with monkeypatch.context() as patch:
            wanted = needed(queries_of(patch, operation))
        path = EVENT_LEASES if operation == "per-event relay" else SHIPPED
        used[path] |= {have for have in defined(path) for index in wanted if index.served_by(have)}
    for path, seen in used.items():
        assert defined(path) <= seen, f"{path.name}: unused {defined(path) - seen}"


def test_the_partitioned_relay_s_delivery_queries_lead_with_the_partition() -> None:
    store = LeaseStore(get_db_client(Settings(emulator_host="127.0.0.1:9")), "outbox", timeout=1)
    index = needed_index(open_events(store, 3, 10, None))
    assert index is not None and index.fields[0] == ("partition", "ASCENDING")
    assert needed_index(held_events(store, 3, 10)) is None  # equalities: single-field indexes


def test_the_ttl_field_large_fields_and_increasing_timestamps_are_exempt_from_indexing() -> None:
    overrides = json.loads(SHIPPED.read_text())["fieldOverrides"]
    exempt = {(o["collectionGroup"], o["fieldPath"]) for o in overrides if o["indexes"] == []}
    assert {("outbox", "expireAt"), ("outbox", "payload")} <= exempt
    # Monotonically increasing: a single-field index on one caps the collection near 500
    # writes/s, and every query ordering by one of them has a composite index of its own.
    increasing = {"createdAt", "updatedAt", "nextAttemptAt", "processedAt"}
    assert {("outbox", name) for name in increasing} <= exempt
    assert [o["fieldPath"] for o in overrides if o.get("ttl")] == ["expireAt"]
