"""`firestore.indexes.json` holds a composite index for every query the relay makes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.firestore_client import get_db_client
from app.relay.leases import LeaseStore

ROOT = Path(__file__).resolve().parents[2]


def queries_the_relay_makes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    store = LeaseStore(get_db_client(Settings(emulator_host="127.0.0.1:9")), "outbox", timeout=1)
    made: list[Any] = []
    original = store.due_query

    class Unsent:
        def __init__(self, query: Any) -> None:
            made.append(query)

        def get(self, **_: Any) -> list[Any]:
            return []

    monkeypatch.setattr(store, "due_query", lambda *a: Unsent(original(*a)))
    now = dt.datetime.now(dt.timezone.utc)
    store.pending(now, 10)
    store.abandoned(now, 10)
    return made


def needed_index(query: Any) -> tuple[str, list[tuple[str, str]]]:
    """Equality fields first, then the ordered (range) field: what Firestore asks for."""
    proto = query._to_protobuf()
    filters = [f.field_filter for f in proto.where.composite_filter.filters]
    equalities = sorted(f.field.field_path for f in filters if f.op.name == "EQUAL")
    ordered = [(o.field.field_path, o.direction.name) for o in proto.order_by]
    fields = [(name, "ASCENDING") for name in equalities] + ordered
    return proto.from_[0].collection_id, fields


def test_every_relay_query_has_its_composite_index(monkeypatch: pytest.MonkeyPatch) -> None:
    definitions = json.loads((ROOT / "firestore.indexes.json").read_text())
    indexes = {
        (
            index["collectionGroup"],
            tuple((field["fieldPath"], field["order"]) for field in index["fields"]),
        )
        for index in definitions["indexes"]
        if index["queryScope"] == "COLLECTION"
    }
    queries = queries_the_relay_makes(monkeypatch)
    assert len(queries) == 2
    for query in queries:
        collection, fields = needed_index(query)
        assert (collection, tuple(fields)) in indexes, f"no index for {fields}"
