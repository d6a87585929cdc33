"""The idempotent HTTP front door: Idempotency-Key handling on a Firestore key registry.

    from firestore_outbox.idempotency import IdempotencyMiddleware, KeyRegistry

    app = IdempotencyMiddleware(orders_app, KeyRegistry(db, config), required={("POST", "/orders")})

Framework-independent core (`keys`, `fingerprint`, `answers`, `crypto`, `registry`) and WSGI
and ASGI middleware over it. An app behind the middleware finds its `Claim` in the WSGI
environ under `CLAIM` and commits its `FrontDoorAnswer` with its own writes
(`claim.complete_in(uow, answer)`); `problem` builds RFC 9457 answers and `server_span` /
`record_answer` trace a request. See docs/front-door.md. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.idempotency.answers import FrontDoorAnswer
    from firestore_outbox.idempotency.asgi import IdempotencyASGIMiddleware
    from firestore_outbox.idempotency.config import IdempotencyConfig
    from firestore_outbox.idempotency.crypto import AnswerUnreadable, EncryptionKeys
    from firestore_outbox.idempotency.door import CLAIM, Claim, FrontDoor, LockLost
    from firestore_outbox.idempotency.keys import InvalidKey, parse_key, record_id
    from firestore_outbox.idempotency.middleware import IdempotencyMiddleware
    from firestore_outbox.idempotency.problems import problem
    from firestore_outbox.idempotency.registry import KeyRegistry
    from firestore_outbox.observability.tracing import record_answer, server_span

__all__ = [
    "CLAIM",
    "AnswerUnreadable",
    "Claim",
    "EncryptionKeys",
    "FrontDoor",
    "FrontDoorAnswer",
    "IdempotencyASGIMiddleware",
    "IdempotencyConfig",
    "IdempotencyMiddleware",
    "InvalidKey",
    "KeyRegistry",
    "LockLost",
    "parse_key",
    "problem",
    "record_answer",
    "record_id",
    "server_span",
]

# Names that left this list, importable from here with a DeprecationWarning for one release
# (docs/upgrading.md).
_MOVED = {
    "Answer": "firestore_outbox.idempotency.FrontDoorAnswer",
    "load_idempotency_config": "firestore_outbox.load_idempotency_config",
}

__getattr__ = lazy_exports(__name__, _MOVED)
