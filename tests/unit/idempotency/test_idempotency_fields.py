"""The ASGI and WSGI middlewares read a request's header fields alike. A WSGI server joins
repeated field lines with ", " (waitress's parser does, as RFC 9110 section 5.3 allows); the
ASGI middleware gets the lines one by one and must judge the same joined value."""

from __future__ import annotations

import asyncio
import io
from collections.abc import MutableMapping
from typing import Any

from firestore_outbox.idempotency import IdempotencyConfig
from firestore_outbox.idempotency.asgi import IdempotencyASGIMiddleware
from firestore_outbox.idempotency.middleware import IdempotencyMiddleware
from firestore_outbox.idempotency.registry import Mismatch

Lines = list[tuple[bytes, bytes]]


class RecordingRegistry:
    """Records what the door asks the registry and answers 422; no Firestore."""

    config = IdempotencyConfig()

    def __init__(self) -> None:
        self.begun: list[tuple[str, str]] = []

    def begin(self, record_id: str, fingerprint: str) -> Mismatch:
        self.begun.append((record_id, fingerprint))
        return Mismatch()


def through_asgi(lines: Lines, body: bytes = b"{}") -> tuple[int, bytes, RecordingRegistry]:
    registry = RecordingRegistry()
    ran: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        ran.append(1)

    guarded = IdempotencyASGIMiddleware(app, registry)  # type: ignore[arg-type]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/jobs",
        "query_string": b"",
        "headers": lines,
    }
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(guarded(scope, receive, send))
    assert ran == []  # refused, or answered 422 by the registry
    return sent[0]["status"], sent[1]["body"], registry


def through_wsgi(lines: Lines, body: bytes = b"{}") -> tuple[int, bytes, RecordingRegistry]:
    """The environ a WSGI server builds from `lines`: repeated fields joined with ", "."""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/jobs",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    for name, value in lines:
        key = name.decode("latin-1").upper().replace("-", "_")
        key = key if key == "CONTENT_TYPE" else f"HTTP_{key}"
        text = value.decode("latin-1")
        environ[key] = f"{environ[key]}, {text}" if key in environ else text
    registry = RecordingRegistry()
    guarded = IdempotencyMiddleware(lambda environ, start: [b"ran"], registry)  # type: ignore[arg-type]
    started: list[str] = []
    answer = b"".join(guarded(environ, lambda status, headers, exc=None: started.append(status)))
    return int(started[0].split()[0]), answer, registry


def test_two_idempotency_key_lines_are_refused_by_both_middlewares() -> None:
    lines = [(b"idempotency-key", b'"first"'), (b"Idempotency-Key", b'"second"')]
    status, body, registry = through_asgi(lines)
    assert (status, body) == through_wsgi(lines)[:2]
    assert status == 400 and b"/problems/idempotency-key-invalid" in body
    assert registry.begun == []  # neither key was looked up


def test_repeated_tenant_and_content_type_lines_reach_the_door_as_on_wsgi() -> None:
    lines = [
        (b"idempotency-key", b'"k"'),
        (b"x-tenant-id", b"shop-1"),
        (b"X-Tenant-Id", b"shop-2"),
        (b"content-type", b"application/json"),
        (b"content-type", b"text/plain"),
    ]
    asgi, wsgi = through_asgi(lines), through_wsgi(lines)
    assert asgi[0] == wsgi[0] == 422
    assert asgi[2].begun == wsgi[2].begun  # the same record id and fingerprint
    single = through_asgi([(b"idempotency-key", b'"k"'), (b"x-tenant-id", b"shop-2")])
    assert single[2].begun[0][0] != asgi[2].begun[0][0]  # not the last line alone
