"""The private client internals `firestore_outbox.firestore.raw` uses, pinned: a client upgrade that
moves
one fails here, by name, instead of failing the relay at run time."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from google.cloud.firestore import SERVER_TIMESTAMP
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.types import write

from firestore_outbox.firestore import raw as firestore_raw
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings

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


def test_the_instance_attributes_the_raw_module_uses_still_exist() -> None:
    db = get_db_client(Settings(emulator_host="127.0.0.1:9"))  # connects to nothing yet
    assert firestore_raw.emulator_host(db) == "127.0.0.1:9"
    assert firestore_raw.gapic_if_made(db) is None  # no call made yet
    for name in ("_client_options", "_target"):
        assert hasattr(db, name), f"Client.{name} moved: firestore_outbox/firestore/raw.py uses it"
    transport = db._firestore_api._transport
    assert transport._wrapped_methods, "the GAPIC transport's _wrapped_methods moved"
    assert firestore_raw.gapic_if_made(db) is not None
    batch = db.batch()
    batch.create(db.collection("outbox").document("e-1"), {"n": 1})
    [encoded] = firestore_raw.encoded_writes(batch) or []
    assert encoded.update.name.endswith("/outbox/e-1")  # a create: an update that must not exist


def test_rewrapped_methods_are_the_ones_every_call_uses() -> None:
    db = get_db_client(Settings(emulator_host="127.0.0.1:9"))
    seen: list[object] = []

    def wrap(method: object) -> object:
        seen.append(method)
        return method

    firestore_raw.rewrap_methods(db, wrap)
    assert seen and set(db._firestore_api._transport._wrapped_methods) == set(seen)


# Private names of google-cloud-firestore's objects that the library reaches (PINNED's, and
# those set on instances); only raw.py may spell them.
_NAMES = (
    "firestore_api|firestore_api_internal|emulator_host|emulator_channel|write_pbs|"
    "wrapped_methods|transport|rpc|reopen_throttle|document_path|to_protobuf|parent_info|"
    "database_string|rpc_metadata|client_options|credentials|target"
)
PRIVATE = re.compile(
    rf"(?<!self)\._({_NAMES})\b|[\"']_({_NAMES})[\"']"
    r"|\b_helpers\.|_DEFAULT_CHANNEL_OPTIONS|_RPC_ERROR_THREAD_NAME"
)


def test_only_the_raw_module_reaches_into_the_firestore_client() -> None:
    library = Path(__file__).resolve().parents[3] / "firestore_outbox"
    reaching = sorted(
        str(path.relative_to(library))
        for path in library.rglob("*.py")
        if PRIVATE.search(path.read_text(encoding="utf-8"))
    )
    assert reaching == ["firestore/raw.py"]
    assert PRIVATE.search('on_emulator = getattr(db, "_emulator_host", None)')  # both spellings
    assert not PRIVATE.search("self._target = target")
