"""The idempotent HTTP front door: Idempotency-Key handling on a Firestore key registry.

Framework-independent core (`keys`, `fingerprint`, `answers`, `crypto`, `registry`) and a
WSGI middleware over it; see the README's "HTTP order API" section.
"""

from app.idempotency.answers import Answer
from app.idempotency.asgi import IdempotencyASGIMiddleware
from app.idempotency.config import IdempotencyConfig, load_idempotency_config
from app.idempotency.crypto import AnswerUnreadable, EncryptionKeys
from app.idempotency.door import CLAIM, Claim, FrontDoor, LockLost
from app.idempotency.keys import InvalidKey, parse_key, record_id
from app.idempotency.middleware import IdempotencyMiddleware
from app.idempotency.registry import KeyRegistry

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
    "load_idempotency_config",
    "parse_key",
    "record_id",
]
