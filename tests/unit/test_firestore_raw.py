"""The private client internals `firestore_outbox.firestore.raw` uses, pinned: a client upgrade that
moves
one fails here, by name, instead of failing the relay at run time."""

from __future__ import annotations

import datetime as dt

import pytest
from google.cloud.firestore import SERVER_TIMESTAMP
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.types import write

from firestore_outbox.config.settings import Settings
from firestore_outbox.firestore import raw as firestore_raw
from firestore_outbox.firestore.client import get_db_client

T0 = dt.datetime(2026, 11, 21, 8, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(("owner", "name"), firestore_raw.PINNED)
def test_every_private_name_the_raw_module_uses_still_exists(owner: object, name: str) -> None:
    where = getattr(owner, "__qualname__", getattr(owner, "__name__", repr(owner)))
    assert hasattr(owner, name), (
        f"google-cloud-firestore moved {where}.{name}, which firestore_outbox/firestore/raw.py "
        "uses for speed: port that module to the new client (or fall back to the public API)"
    )


def test_a_query_still_knows_its_collection_as_parent() -> None:
    db = get_db_client(Settings(emulator_host="127.0.0.1:9"))
    query = db.collection("outbox").limit(1)
    assert query._parent is not None and query._parent.id == "outbox", (
        "Query._parent moved: firestore_outbox/firestore/raw.run_query reads it"
    )


def test_raw_updates_encode_exactly_what_the_clients_encoder_does() -> None:
    db = get_db_client(Settings(emulator_host="127.0.0.1:9"))
    ref = db.collection("outbox").document("e-1")
    fields = {
        "status": "PROCESSING",
        "attempts": 2,
        "lastError": None,
        "flag": True,
        "nextAttemptAt": T0,
        "payload": {"n": 1.5},
        "updatedAt": SERVER_TIMESTAMP,
    }
    raw = firestore_raw.update_pb(ref, fields, T0)
    option = db.write_option(last_update_time=T0)
    [expected] = _helpers.pbs_for_update(ref._document_path, fields, option)
    expected = write.Write.pb(expected)
    # The same write; the client happens to sort the mask's field paths.
    assert sorted(raw.update_mask.field_paths) == sorted(expected.update_mask.field_paths)
    raw.update_mask.Clear()
    expected.update_mask.Clear()
    assert raw == expected
