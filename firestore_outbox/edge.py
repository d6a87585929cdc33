"""The public edge's defaults: where a convenience given no settings gets them.

A few public names of the lower folders take no settings on purpose (`FirestoreUnitOfWork(db)`
with no `partitions=`, `get_db_client()`, `nudger_for(db, settings)`, `load_relay_config()`,
`load_receiver_config()`, `load_idempotency_config()`). They must not import the composition
root (`firestore_outbox.config`, which sits on top and imports them), so they ask this slot,
which `firestore_outbox/__init__.py` fills with the root's loader (imported on first use):

    edge.default()         # the process's configuration: the environment, read once
    edge.load(environ)     # a configuration of `environ` (or the environment, read now)

Everything else receives its settings as arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = ["Defaults", "Loader", "default", "fill", "load"]


class Defaults(Protocol):
    """What the lower folders read from a configuration they did not build. The answers are
    typed where they are read (`firestore_outbox.config.loader.Configuration` names them): a
    type named here would be an import from this bottom module up into the folders."""

    @property
    def settings(self) -> Any: ...

    def partitions(self) -> Any: ...

    def relay(self) -> Any: ...

    def nudge(self) -> Any: ...

    def receiver(self, *, verify_signatures: bool = True) -> Any: ...

    def idempotency(self) -> Any: ...


class Loader(Protocol):
    """The root's loader: `Configuration` itself."""

    def load(self, environ: Mapping[str, str] | None = None) -> Defaults: ...

    def default(self) -> Defaults: ...


_slot: list[Callable[[], Loader]] = []


def fill(loader: Callable[[], Loader]) -> None:
    """Point the slot at `loader()` (called on each use, so the root loads when first asked)."""
    _slot[:] = [loader]


def _loader() -> Loader:
    if not _slot:  # the package's __init__ fills it before any module below runs
        raise RuntimeError("firestore_outbox.edge is not filled: import firestore_outbox first")
    return _slot[0]()


def default() -> Defaults:
    """The process's configuration (the environment over `./.env`, read once and kept)."""
    return _loader().default()


def load(environ: Mapping[str, str] | None = None) -> Defaults:
    """A configuration of `environ`, or of the environment over `./.env` read now."""
    return _loader().load(environ)
