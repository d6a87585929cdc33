"""The Idempotency-Key middleware for any WSGI app.

For POST and PATCH carrying `Idempotency-Key` (and for the routes that require one), it
reads the body (at most `max_request_bytes`), fingerprints the request and asks the
registry. The answers follow the IETF draft "The Idempotency-Key HTTP Header Field": 400 for
a missing or malformed key, 422 for a key reused with another request, 409 with Retry-After
while the first is still running, and a repeat of a completed request gets its answer again
with `Idempotent-Replayed: true`.

A request that holds the lock finds a `Claim` at `environ[CLAIM]`. An app that writes to
Firestore queues the answer on its unit of work (`claim.complete_in(uow, answer)`), so the
answer commits with the business writes or not at all. Otherwise the middleware stores an
answer below 400 once the app returned it; any other answer (validation failures, 5xx)
releases the key, so a retry runs anew.
"""

from __future__ import annotations

import io
import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.errors import OutboxError
from app.idempotency.answers import Answer
from app.idempotency.crypto import AnswerUnreadable
from app.idempotency.fingerprint import fingerprint
from app.idempotency.keys import InvalidKey, InvalidTenant, parse_key, parse_tenant, record_id
from app.idempotency.problems import problem
from app.idempotency.registry import InProgress, KeyRegistry, Lock, Mismatch, Replay
from app.idempotency.wsgi import WSGIApp, collect, read_body, send
from app.logs import log_event

if TYPE_CHECKING:
    from app.uow import FirestoreUnitOfWork

logger = logging.getLogger("firestore_outbox.idempotency")

CLAIM = "firestore_outbox.idempotency"
KEY_ENVIRON = "HTTP_IDEMPOTENCY_KEY"  # the Idempotency-Key header, as WSGI names it
GUARDED_METHODS = frozenset({"POST", "PATCH"})


class LockLost(OutboxError):
    """The request's lock was taken over before it committed; nothing it queued was written."""


@dataclass
class Claim:
    """The lock one request holds, handed to the app."""

    registry: KeyRegistry
    lock: Lock
    queued: bool = field(default=False)

    def complete_in(self, uow: FirestoreUnitOfWork, answer: Answer) -> None:
        """Store `answer` in the same batch as the writes on `uow`."""
        self.registry.complete_in(uow, self.lock, answer)
        self.queued = True


class IdempotencyMiddleware:
    """Wrap `app`; `required` lists the (method, path) pairs that must carry a key."""

    def __init__(
        self,
        app: WSGIApp,
        registry: KeyRegistry,
        *,
        required: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        self.app = app
        self.registry = registry
        self.required = required
        self.counts: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        path = str(environ.get("PATH_INFO", "") or "/")
        header = environ.get(KEY_ENVIRON)
        if method not in GUARDED_METHODS or (
            header is None and (method, path) not in self.required
        ):
            return self.app(environ, start_response)
        return send(self._guarded(environ, method, path, header), start_response)

    def _guarded(self, environ: dict[str, Any], method: str, path: str, header: Any) -> Answer:
        config = self.registry.config
        if header is None:
            return problem(
                400,
                "idempotency-key-missing",
                "Idempotency-Key missing",
                f"{method} {path} requires an Idempotency-Key header",
            )
        try:
            key = parse_key(str(header))
            tenant = parse_tenant(environ.get(config.tenant_environ_key))
        except (InvalidKey, InvalidTenant) as exc:
            return problem(400, "idempotency-key-invalid", "Invalid Idempotency-Key", str(exc))
        body = read_body(environ, config.max_request_bytes)
        if isinstance(body, Answer):
            return body
        environ["wsgi.input"] = io.BytesIO(body)
        scope = record_id(tenant, key)
        print_ = fingerprint(
            method,
            path,
            str(environ.get("QUERY_STRING", "")),
            str(environ.get("CONTENT_TYPE", "")),
            tenant,
            body,
        )
        try:
            begun = self.registry.begin(scope, print_)
        except AnswerUnreadable as exc:
            logger.error("a stored answer cannot be replayed: %s", exc)
            return problem(
                500,
                "answer-unreadable",
                "Stored answer unreadable",
                "the answer stored for this key cannot be decrypted with the keys set",
            )
        self._count("hit")
        if isinstance(begun, Replay):
            self._count("replay")
            return begun.answer
        if isinstance(begun, Mismatch):
            self._count("conflict")
            return problem(
                422,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                "this key was first used for a different request",
            )
        if isinstance(begun, InProgress):
            self._count("in_progress")
            return problem(
                409,
                "request-in-progress",
                "Request in progress",
                "a request with this key is still being processed; retry later",
                [("Retry-After", str(begun.retry_after))],
            )
        return self._run(environ, begun)

    def _run(self, environ: dict[str, Any], lock: Lock) -> Answer:
        claim = Claim(self.registry, lock)
        environ[CLAIM] = claim
        try:
            answer = collect(self.app, environ)
        except LockLost:
            self._count("lock_lost")
            return problem(
                409,
                "request-in-progress",
                "Request in progress",
                "this request's key was taken over by a retry; retry to get its answer",
                [("Retry-After", "1")],
            )
        except Exception:
            logger.exception("the application failed; the idempotency key is released")
            self.registry.release(lock)
            return problem(500, "internal-error", "Internal error", "the request failed; retry it")
        if claim.queued and answer.status < 500:
            return answer  # stored with the business writes
        if answer.status < 400 and not claim.queued:
            if self.registry.complete(lock, answer):
                return answer
            self._count("lock_lost")
            return answer
        self.registry.release(lock)
        return answer

    def _count(self, what: str) -> None:
        with self._count_lock:
            self.counts[what] += 1
            total = self.counts[what]
        fields: dict[str, Any] = {f"idempotency_{what}_total": total}
        log_event(
            logger,
            logging.DEBUG if what == "hit" else logging.INFO,
            f"idempotency.{what}",
            f"idempotency {what}",
            **fields,
        )
