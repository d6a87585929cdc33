"""The front door's decisions, for any HTTP framework: what a keyed request gets, and what
becomes of its key once the app has answered. The WSGI middleware and the ASGI adapter only
move bytes in and out of it."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from google.api_core.exceptions import GoogleAPIError

from firestore_outbox.errors import CommitFailed, OutboxError
from firestore_outbox.idempotency.answers import FrontDoorAnswer
from firestore_outbox.idempotency.crypto import AnswerUnreadable
from firestore_outbox.idempotency.fingerprint import fingerprint
from firestore_outbox.idempotency.keys import (
    InvalidKey,
    InvalidTenant,
    parse_key,
    parse_tenant,
    record_id,
)
from firestore_outbox.idempotency.metrics import record_idempotency, record_processing
from firestore_outbox.idempotency.problems import problem
from firestore_outbox.idempotency.registry import InProgress, KeyRegistry, Lock, Mismatch, Replay
from firestore_outbox.observability.logs import log_event

if TYPE_CHECKING:
    from firestore_outbox.producer.uow import FirestoreUnitOfWork

logger = logging.getLogger("firestore_outbox.idempotency")

CLAIM = "firestore_outbox.idempotency"  # where an app finds its Claim (WSGI environ, ASGI scope)
GUARDED_METHODS = frozenset({"POST", "PATCH"})


class LockLost(OutboxError):
    """The request's lock was taken over before it committed; nothing it queued was written."""


@dataclass
class Claim:
    """The lock one request holds, handed to the app."""

    registry: KeyRegistry
    lock: Lock
    queued: bool = field(default=False)
    started: float = field(default_factory=time.monotonic)  # when the lock was taken

    def complete_in(self, uow: FirestoreUnitOfWork, answer: FrontDoorAnswer) -> None:
        """Store `answer` in the same batch as the writes on `uow`."""
        self.registry.complete_in(uow, self.lock, answer)
        self.queued = True


@dataclass(frozen=True)
class Keyed:
    """What the door reads of a request: method, path, query, media type, the tenant header's
    and the Idempotency-Key header's values (None when absent)."""

    method: str
    path: str
    query: str
    content_type: str
    tenant: str | None
    key: str | None


def _busy(detail: str, retry_after: int = 1) -> FrontDoorAnswer:
    return problem(
        409,
        "request-in-progress",
        "Request in progress",
        detail,
        [("Retry-After", str(retry_after))],
    )


class FrontDoor:
    """Idempotency-Key handling over a `KeyRegistry`; `required` lists the (method, path)
    pairs that must carry a key. Thread-safe; synchronous (Firestore calls)."""

    def __init__(
        self, registry: KeyRegistry, required: frozenset[tuple[str, str]] = frozenset()
    ) -> None:
        self.registry = registry
        self.required = required
        self.counts: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    def guards(self, method: str, path: str, key: str | None) -> bool:
        """Whether the door handles this request at all (else it goes straight to the app)."""
        return method in GUARDED_METHODS and (key is not None or (method, path) in self.required)

    def refusal(self, request: Keyed) -> FrontDoorAnswer | None:
        """A 400 for a missing or malformed key or tenant, before the body is read."""
        if request.key is None:
            detail = f"{request.method} {request.path} requires an Idempotency-Key header"
            return problem(400, "idempotency-key-missing", "Idempotency-Key missing", detail)
        try:
            parse_key(request.key)
            parse_tenant(request.tenant)
        except (InvalidKey, InvalidTenant) as exc:
            return problem(400, "idempotency-key-invalid", "Invalid Idempotency-Key", str(exc))
        return None

    def enter(self, request: Keyed, body: bytes) -> FrontDoorAnswer | Claim:
        """The answer for a repeat (replay, 422, 409), or the claim to run the app under."""
        tenant = parse_tenant(request.tenant)
        scope = record_id(tenant, parse_key(str(request.key)))
        print_ = fingerprint(
            request.method, request.path, request.query, request.content_type, tenant, body
        )
        try:
            begun = self.registry.begin(scope, print_)
        except (GoogleAPIError, CommitFailed) as exc:  # nothing held: a retry is safe
            logger.error("the key registry is unavailable: %s", type(exc).__name__)
            detail = "the idempotency key could not be checked; retry with the same key"
            return problem(503, "registry-unavailable", "Service unavailable", detail)
        except AnswerUnreadable as exc:
            logger.error("a stored answer cannot be replayed: %s", exc)
            detail = "the answer stored for this key cannot be decrypted with the keys set"
            return problem(500, "answer-unreadable", "Stored answer unreadable", detail)
        self.count("hit")
        if isinstance(begun, Replay):
            self.count("replay")
            return begun.answer
        if isinstance(begun, Mismatch):
            self.count("conflict")
            detail = "this key was first used for a different request"
            return problem(422, "idempotency-key-reused", "Idempotency-Key reused", detail)
        if isinstance(begun, InProgress):
            self.count("in_progress")
            return _busy("a request with this key is still being processed; retry later")
        return Claim(self.registry, begun)

    def leave(
        self, claim: Claim, answer: FrontDoorAnswer | None, error: BaseException | None
    ) -> FrontDoorAnswer:
        """What the client gets once the app answered (or raised), and the key's fate: kept
        with the business writes, stored now (below 400), or released (anything else)."""
        answered, outcome = self._settle(claim, answer, error)
        record_processing(time.monotonic() - claim.started, outcome)
        return answered

    def _settle(
        self, claim: Claim, answer: FrontDoorAnswer | None, error: BaseException | None
    ) -> tuple[FrontDoorAnswer, str]:
        """`leave`'s answer, and what became of the key: `stored`, `released`, `lock_lost`."""
        if isinstance(error, LockLost):
            self.count("lock_lost")
            busy = _busy("this request's key was taken over by a retry; retry to get its answer")
            return busy, "lock_lost"
        if error is not None or answer is None:
            logger.error("the application failed; the idempotency key is released", exc_info=error)
            self.registry.release(claim.lock)
            detail = "the request failed; retry it"
            return problem(500, "internal-error", "Internal error", detail), "released"
        if claim.queued and answer.status < 500:
            return answer, "stored"  # stored with the business writes
        if answer.status < 400 and not claim.queued:
            if not self.registry.complete(claim.lock, answer):
                self.count("lock_lost")
                return answer, "lock_lost"
            return answer, "stored"
        self.registry.release(claim.lock)
        return answer, "released"

    def count(self, what: str) -> None:
        """Count an outcome and log the running total (`idempotency_<what>_total`)."""
        with self._count_lock:
            self.counts[what] += 1
            total = self.counts[what]
        record_idempotency(what)
        fields: dict[str, Any] = {f"idempotency_{what}_total": total}
        level = logging.DEBUG if what == "hit" else logging.INFO
        log_event(logger, level, f"idempotency.{what}", f"idempotency {what}", **fields)


App = TypeVar("App")


class Guard(Generic[App]):
    """Base of the WSGI and ASGI middlewares: `app` behind a `FrontDoor`; `required` lists
    the (method, path) pairs that must carry a key. `tenant_of`, given the WSGI environ or
    the ASGI scope, names the tenant instead of the `IDEMPOTENCY_TENANT_HEADER` header: for
    example the authenticated principal, WSGI's `REMOTE_USER`."""

    def __init__(
        self,
        app: App,
        registry: KeyRegistry,
        *,
        required: frozenset[tuple[str, str]] = frozenset(),
        tenant_of: Callable[[Mapping[str, Any]], str | None] | None = None,
    ) -> None:
        self.app = app
        self.registry = registry
        self.door = FrontDoor(registry, required)
        self.tenant_of = tenant_of
