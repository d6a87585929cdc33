"""The Idempotency-Key middleware for ASGI apps (Starlette, FastAPI, ...), over the same
`FrontDoor` as the WSGI middleware.

The registry talks to Firestore with the synchronous client, so its calls run in a worker
thread (`asyncio.to_thread`) and never block the event loop. The app finds its `Claim` at
`scope[CLAIM]`; an app that completes it in a unit of work must commit that unit of work off
the event loop too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from firestore_outbox.idempotency.answers import FrontDoorAnswer
from firestore_outbox.idempotency.door import CLAIM, Guard, Keyed
from firestore_outbox.idempotency.wsgi import too_large

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


class _Gone(Exception):
    """The client disconnected before its body arrived."""


class IdempotencyASGIMiddleware(Guard[ASGIApp]):
    """Wrap the ASGI `app`; `required` lists the (method, path) pairs that must carry a key."""

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        headers = _fields(scope.get("headers", []))
        method, path = str(scope["method"]).upper(), str(scope.get("path") or "/")
        key = headers.get("idempotency-key")
        if not self.door.guards(method, path, key):
            await self.app(scope, receive, send)
            return
        request = Keyed(
            method,
            path,
            bytes(scope.get("query_string", b"")).decode("latin-1"),
            headers.get("content-type", ""),
            self.tenant_of(scope)
            if self.tenant_of
            else headers.get(self.registry.config.tenant_header.lower()),
            key,
        )
        try:
            answer = self.door.refusal(request) or await self._guarded(scope, receive, request)
        except _Gone:
            return
        await _send(answer, send)

    async def _guarded(
        self, scope: MutableMapping[str, Any], receive: Receive, request: Keyed
    ) -> FrontDoorAnswer:
        body = await _read_body(receive, self.registry.config.max_request_bytes)
        if body is None:
            return too_large(self.registry.config.max_request_bytes)
        claim = await asyncio.to_thread(self.door.enter, request, body)
        if isinstance(claim, FrontDoorAnswer):
            return claim
        try:
            answer = await _collect(self.app, {**scope, CLAIM: claim}, body, receive)
        except Exception as exc:
            return await asyncio.to_thread(self.door.leave, claim, None, exc)
        return await asyncio.to_thread(self.door.leave, claim, answer, None)


def _fields(lines: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header fields by lower-case name, repeated lines joined with ", " as WSGI servers join
    them (RFC 9110 section 5.3): both middlewares judge the same value, so two
    Idempotency-Key lines are not one RFC 8941 string (400), never the last line alone."""
    fields: dict[str, str] = {}
    for name, value in lines:
        key, text = bytes(name).decode("latin-1").lower(), bytes(value).decode("latin-1")
        fields[key] = f"{fields[key]}, {text}" if key in fields else text
    return fields


async def _read_body(receive: Receive, cap: int) -> bytes | None:
    """The whole body, or None past `cap` (stops reading there)."""
    # One buffer, not a list of chunks: a body of tiny chunks would cost many times its size.
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Gone  # the client left mid-body: nothing to lock, no one to answer
        body += message.get("body", b"")
        if len(body) > cap:
            return None
        if not message.get("more_body", False):
            break
    return bytes(body)


async def _collect(
    app: ASGIApp, scope: MutableMapping[str, Any], body: bytes, client: Receive
) -> FrontDoorAnswer:
    """Run the app on the buffered body and gather its whole answer; after the body, the
    app's `receive` is the client's again (a disconnect reaches it)."""
    delivered = False
    started: dict[str, Any] = {}
    parts: list[bytes] = []

    async def receive() -> Message:
        nonlocal delivered
        if delivered:
            return await client()
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            parts.append(bytes(message.get("body", b"")))

    await app(scope, receive, send)
    headers = [
        (bytes(n).decode("latin-1"), bytes(v).decode("latin-1"))
        for n, v in started.get("headers", [])
    ]
    return FrontDoorAnswer.of(int(started["status"]), headers, b"".join(parts))


async def _send(answer: FrontDoorAnswer, send: Send) -> None:
    framing = {"content-length", "transfer-encoding"}
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in answer.headers
        if name.lower() not in framing
    ]
    headers.append((b"content-length", str(len(answer.body)).encode()))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})
