"""The idempotent HTTP front door: Idempotency-Key handling on a Firestore key registry.

Framework-independent core (`keys`, `fingerprint`, `answers`, `crypto`, `registry`) and a
WSGI middleware over it; see docs/front-door.md.
"""

from firestore_outbox.idempotency.answers import Answer
from firestore_outbox.idempotency.asgi import IdempotencyASGIMiddleware
from firestore_outbox.idempotency.config import IdempotencyConfig
from firestore_outbox.idempotency.crypto import AnswerUnreadable, EncryptionKeys
from firestore_outbox.idempotency.door import CLAIM, Claim, FrontDoor, LockLost
from firestore_outbox.idempotency.keys import InvalidKey, parse_key, record_id
from firestore_outbox.idempotency.middleware import IdempotencyMiddleware
from firestore_outbox.idempotency.registry import KeyRegistry

__all__ = [
    "CLAIM",
    "Answer",
    "AnswerUnreadable",
    "Claim",
    "EncryptionKeys",
    "FrontDoor",
    "IdempotencyASGIMiddleware",
    "IdempotencyConfig",
    "IdempotencyMiddleware",
    "InvalidKey",
    "KeyRegistry",
    "LockLost",
    "parse_key",
    "record_id",
]
