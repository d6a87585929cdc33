"""The order API as an HTTP-triggered Function Compute 3.0 function (built-in python3.10).

Function Compute 3.0 hands a built-in runtime's handler the HTTP request as an event (JSON
bytes: `version`, `rawPath`, `headers`, `queryParameters`, `body`, `isBase64Encoded`,
`requestContext.http.{method,path,sourceIp}`) and turns the returned
`{statusCode, headers, body, isBase64Encoded}` into the HTTP response. This adapter builds a
WSGI environ from the event and runs the same app `outbox api` serves, middleware included.
Nothing connects at import; the configuration is read by the first invocation.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from typing import Any
from urllib.parse import urlencode

from app.api import make_api
from firestore_outbox.config.settings import load_settings
from firestore_outbox.errors import OutboxError
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.idempotency import load_idempotency_config
from firestore_outbox.idempotency.answers import Answer
from firestore_outbox.idempotency.problems import problem
from firestore_outbox.idempotency.wsgi import WSGIApp, collect
from firestore_outbox.observability.logs import configure_logging, configured_secrets

logger = logging.getLogger("firestore_outbox.api")

_lock = threading.Lock()
_app: WSGIApp | None = None
# Text bodies go back as they are; anything else base64, as the response struct allows.
_TEXT_TYPES = ("application/json", "application/problem+json", "text/")


def initialize(context: Any) -> None:
    """Build the app (and its Firestore client) before the first request."""
    configure_logging(configured_secrets(), thread_exceptions=True)
    try:
        _api()
    except OutboxError as exc:  # each invocation reports it again
        logger.error("api not configured: %s", exc)


def handler(event: bytes | str | dict[str, Any], context: Any) -> dict[str, Any]:
    """Answer one HTTP request given as Function Compute 3.0's HTTP trigger event."""
    request = json.loads(event) if isinstance(event, (bytes, str)) else event
    try:
        app = _api()
    except OutboxError as exc:
        logger.error("api not configured: %s", exc)
        return _response(problem(503, "not-configured", "Not configured", "the API is not set up"))
    return _response(collect(app, environ_of(request)))


def environ_of(request: dict[str, Any]) -> dict[str, Any]:
    """The WSGI environ of an HTTP trigger event."""
    http = request.get("requestContext", {}).get("http", {})
    raw = request.get("body") or ""
    body = base64.b64decode(raw) if request.get("isBase64Encoded") else raw.encode()
    query = request.get("queryParameters") or {}
    environ: dict[str, Any] = {
        "REQUEST_METHOD": str(http.get("method") or "GET").upper(),
        "PATH_INFO": str(http.get("path") or request.get("rawPath") or "/"),
        "QUERY_STRING": urlencode(sorted(query.items())),
        "SERVER_NAME": "fc",
        "SERVER_PORT": "443",
        "SERVER_PROTOCOL": str(http.get("protocol") or "HTTP/1.1"),
        "REMOTE_ADDR": str(http.get("sourceIp") or ""),
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "https",
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for name, value in (request.get("headers") or {}).items():
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = str(value)
        elif key != "CONTENT_LENGTH":  # the body's own length counts, not the header's
            environ[f"HTTP_{key}"] = str(value)
    return environ


def _response(answer: Answer) -> dict[str, Any]:
    headers: dict[str, str] = {}
    for name, value in answer.headers:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    text = headers.get("Content-Type", "").startswith(_TEXT_TYPES)
    return {
        "statusCode": answer.status,
        "headers": headers,
        "isBase64Encoded": not text,
        "body": answer.body.decode() if text else base64.b64encode(answer.body).decode(),
    }


def _api() -> WSGIApp:
    global _app
    with _lock:
        if _app is None:
            settings = load_settings()
            _app = make_api(get_db_client(settings), settings, load_idempotency_config())
        return _app
