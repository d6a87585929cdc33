"""Names a package exports without importing their modules until first used (PEP 562).

One source of truth: a public package lists each lazy name once, as a type-only import
(`if TYPE_CHECKING: from <module> import <name>`), which type checkers and editors read; at
run time `lazy_exports` reads the same block from the package's source and imports `<module>`
when `<name>` is first looked up. A name cannot be exported lazily without being typed, nor
typed from another module than the one it is loaded from.

A name that left a package's list for another face keeps importing from the old place for a
release: `lazy_exports(__name__, moved={"Old": "firestore_outbox.face.New"})` hands out the
object the new place exports, with a `DeprecationWarning` that names the new place.
"""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["PUBLIC_MODULES", "PUBLISHERS_MOVED", "lazy_exports", "moved_to", "type_only_imports"]

# The modules whose `__all__` is the public API, an audience's list first, then the shared
# ones; `firestore_outbox` itself re-exports the names most users need. Everything else is
# internal (the API reference is generated from this list; a test holds the project's own
# entry points to it).
PUBLIC_MODULES = (
    "firestore_outbox.producer",
    "firestore_outbox.relay",
    "firestore_outbox.function_compute",
    "firestore_outbox.consumer",
    "firestore_outbox.idempotency",
    "firestore_outbox.testing",
    "firestore_outbox.publishers",
    "firestore_outbox.example",
    "firestore_outbox.errors",
    "firestore_outbox.fields",
    "firestore_outbox",
)


def moved_to(face: str, names: Iterable[str]) -> dict[str, str]:
    """`moved` entries for `names` that left a list for `face`'s (`lazy_exports`)."""
    return {name: f"{face}.{name}" for name in names}


# The publishers' names that left the top face and the relay's for
# `firestore_outbox.publishers` in 0.8 (docs/upgrading.md): both old places hand them out.
PUBLISHERS_MOVED = moved_to(
    "firestore_outbox.publishers",
    (
        "AccessKeySettings",
        "AmqpSettings",
        "Delivery",
        "EventBridgeSettings",
        "Fc3Settings",
        "FcSettings",
        "HttpSettings",
        "MnsSettings",
        "Outcome",
        "PublishResult",
        "Publisher",
        "RocketMqSettings",
    ),
)


def type_only_imports(path: Path) -> dict[str, str]:
    """name -> module, from the `if TYPE_CHECKING:` blocks at the top level of `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                for alias in statement.names:
                    found[alias.asname or alias.name] = statement.module
    return found


def lazy_exports(package: str, moved: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports, on first use of a name, the module
    its type-only import names, and caches the value in the package's namespace.

    `moved` maps a name the package no longer lists to its new dotted place
    (`"firestore_outbox.publishers.HttpSettings"`); looking it up warns and returns that
    object, on every lookup (nothing cached, so each importing place is told).
    """
    module = sys.modules[package]
    names = type_only_imports(Path(str(module.__file__)))
    moves = dict(moved or {})

    def __getattr__(name: str) -> Any:
        source = names.get(name)
        if source is None:
            if name in moves:
                return _moved(package, name, moves[name])
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        setattr(module, name, value)  # later lookups skip this
        return value

    return __getattr__


def _moved(package: str, name: str, place: str) -> Any:
    where, _, new_name = place.rpartition(".")
    warnings.warn(
        f"{package}.{name} is deprecated: import {place} instead",
        DeprecationWarning,
        stacklevel=3,  # the importing line, past this and the package's __getattr__
    )
    return getattr(importlib.import_module(where), new_name)
