"""WSGI plumbing of the middleware: a bounded body read, a whole answer collected, sent."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from firestore_outbox.idempotency.answers import FrontDoorAnswer
from firestore_outbox.idempotency.problems import problem

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def read_body(environ: dict[str, Any], cap: int) -> bytes | FrontDoorAnswer:
    length_text = str(environ.get("CONTENT_LENGTH", "") or "").strip()
    stream = environ.get("wsgi.input") or io.BytesIO()
    if length_text:
        if not length_text.isdigit():
            return problem(400, "bad-request", "Bad request", "Content-Length is not a number")
        length = int(length_text)
        if length > cap:
            return too_large(cap)
        return bytes(stream.read(length))
    body = bytes(stream.read(cap + 1))  # no length given: read at most one byte past the cap
    return too_large(cap) if len(body) > cap else body


def too_large(cap: int) -> FrontDoorAnswer:
    """The 413 for a body over `cap` bytes, from the middleware or the server (`app.api`)."""
    return problem(
        413,
        "content-too-large",
        "Content too large",
        f"the request body is larger than {cap} bytes",
    )


def collect(app: WSGIApp, environ: dict[str, Any]) -> FrontDoorAnswer:
    """Run a WSGI app and collect its whole answer (the middleware must see it to store it)."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started[:] = [status, headers]
        return lambda data: None  # the legacy write() callable; our apps do not use it

    result = app(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    status, headers = started
    return FrontDoorAnswer.of(int(str(status).split(" ", 1)[0]), headers, body)


def send(answer: FrontDoorAnswer, start_response: Callable[..., Any]) -> list[bytes]:
    framing = {"content-length", "transfer-encoding"}
    headers = [(n, v) for n, v in answer.headers if n.lower() not in framing]
    headers.append(("Content-Length", str(len(answer.body))))
    start_response(answer.status_line, headers)
    return [answer.body]
