"""The relay of the tree a benchmark process runs: this checkout's `firestore_outbox`, or an
older commit's, exported by `variants.export_tree` and first on `PYTHONPATH`. Commits before
the package issue kept the library in `app/` (`app.relay`, `app.config`); later ones in
`firestore_outbox/`. Every worker and the seeding take their classes from here, so that a
variant's relay, settings and writes all come from one tree."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from types import SimpleNamespace
from typing import Any

_NAMES = {
    "Settings": ("firestore.settings", "config"),
    "get_db_client": ("firestore.client", "firestore_client"),
    "Relay": ("relay", "relay"),
    "RelayConfig": ("relay", "relay"),
    "FirestoreUnitOfWork": ("producer.uow", "uow"),
}


def old_layout() -> bool:
    """True when the tree on `PYTHONPATH` is from before `firestore_outbox/` existed."""
    try:
        return importlib.util.find_spec("app.relay.core") is not None
    except ModuleNotFoundError:  # no `app`, or one without `app.relay`
        return False


def load() -> SimpleNamespace:
    """The tree's `Settings`, `get_db_client`, `Relay`, `RelayConfig`, `FirestoreUnitOfWork`,
    and `where`, the file its relay was imported from."""
    old = old_layout()
    found = {}
    for name, (new_module, old_module) in _NAMES.items():
        module = f"app.{old_module}" if old else f"firestore_outbox.{new_module}"
        if not old and importlib.util.find_spec(module) is None:
            module = "firestore_outbox"  # a tree whose module moved: its public name
        found[name] = getattr(importlib.import_module(module), name)
    found["where"] = importlib.import_module(found["Relay"].__module__).__file__
    return SimpleNamespace(**found)


def relay_config(found: SimpleNamespace, url: str, **fields: Any) -> Any:
    """The tree's `RelayConfig` delivering to `url` over HTTP, with the relay's own `fields`:
    flat (`downstream_url=`) before the settings were composed, `publisher=HttpSettings(...)`
    after."""
    if "downstream_url" in {f.name for f in dataclasses.fields(found.RelayConfig)}:
        return found.RelayConfig(downstream_url=url, **fields)
    http = importlib.import_module("firestore_outbox.publishers.http.settings")
    return found.RelayConfig(publisher=http.HttpSettings(url=url), **fields)
