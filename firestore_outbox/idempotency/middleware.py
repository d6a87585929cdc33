"""The Idempotency-Key middleware for any WSGI app (Flask: `app.wsgi_app = ...`).

For POST and PATCH carrying `Idempotency-Key` (and for the routes that require one), it
reads the body (at most `max_request_bytes`) and asks the `FrontDoor`. The answers follow
the IETF draft "The Idempotency-Key HTTP Header Field": 400 for a missing or malformed key,
422 for a key reused with another request, 409 with Retry-After while the first is still
running, and a repeat of a completed request gets its answer again with
`Idempotent-Replayed: true`.

A request that holds the lock finds a `Claim` at `environ[CLAIM]`. An app that writes to
Firestore queues the answer on its unit of work (`claim.complete_in(uow, answer)`), so the
answer commits with the business writes or not at all. Otherwise the middleware stores an
answer below 400 once the app returned it; any other answer (validation failures, 5xx)
releases the key, so a retry runs anew.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from firestore_outbox.idempotency.answers import FrontDoorAnswer
from firestore_outbox.idempotency.door import CLAIM, Guard, Keyed
from firestore_outbox.idempotency.wsgi import WSGIApp, collect, read_body, send

KEY_ENVIRON = "HTTP_IDEMPOTENCY_KEY"  # the Idempotency-Key header, as WSGI names it


class IdempotencyMiddleware(Guard[WSGIApp]):
    """Wrap the WSGI `app`; `required` lists the (method, path) pairs that must carry a key."""

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        path = str(environ.get("PATH_INFO", "") or "/")
        key = environ.get(KEY_ENVIRON)
        if not self.door.guards(method, path, key):
            return self.app(environ, start_response)
        return send(self._guarded(environ, method, path, key), start_response)

    def _guarded(
        self, environ: dict[str, Any], method: str, path: str, key: Any
    ) -> FrontDoorAnswer:
        request = Keyed(
            method,
            path,
            str(environ.get("QUERY_STRING", "")),
            str(environ.get("CONTENT_TYPE", "")),
            self.tenant_of(environ)
            if self.tenant_of
            else environ.get(self.registry.config.tenant_environ_key),
            None if key is None else str(key),
        )
        refused = self.door.refusal(request)
        if refused is not None:
            return refused
        body = read_body(environ, self.registry.config.max_request_bytes)
        if isinstance(body, FrontDoorAnswer):
            return body
        environ["wsgi.input"] = io.BytesIO(body)
        claim = self.door.enter(request, body)
        if isinstance(claim, FrontDoorAnswer):
            return claim
        environ[CLAIM] = claim
        try:
            answer = collect(self.app, environ)
        except Exception as exc:
            return self.door.leave(claim, None, exc)
        return self.door.leave(claim, answer, None)
