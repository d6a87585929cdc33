"""A WSGI app as an HTTP-triggered Function Compute 3.0 function (built-in python3.10).

Function Compute 3.0 hands a built-in runtime's handler the HTTP request as an event (JSON
bytes: `version`, `rawPath`, `headers`, `queryParameters`, `body`, `isBase64Encoded`,
`requestContext.http.{method,path,sourceIp}`) and turns the returned
`{statusCode, headers, body, isBase64Encoded}` into the HTTP response. `HttpFunction` builds a
WSGI environ from the event and runs the app, middleware included. Nothing connects at
import; the configuration is read by the first invocation.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import build_front_door
from firestore_outbox.errors import OutboxError
from firestore_outbox.idempotency.problems import problem
from firestore_outbox.idempotency.wsgi import WSGIApp, collect
from firestore_outbox.observability.logs import configure_logging

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.idempotency.answers import FrontDoorAnswer
    from firestore_outbox.idempotency.config import IdempotencyConfig

__all__ = ["HttpFunction", "environ_of"]

logger = logging.getLogger("firestore_outbox.api")

# Text bodies go back as they are; anything else base64, as the response struct allows.
_TEXT_TYPES = ("application/json", "application/problem+json", "text/")
AppFactory = Callable[["Client", "Settings", "IdempotencyConfig"], WSGIApp]


class HttpFunction:
    """`handler(event, context)` and `initialize(context)` serving the WSGI app that
    `make_app(db, settings, idempotency_config)` builds, once per instance."""

    def __init__(
        self,
        make_app: AppFactory,
        load: Callable[[], Configuration] = Configuration.load,
    ) -> None:
        self._make_app = make_app
        self._load = load
        self._lock = threading.Lock()
        self._app: WSGIApp | None = None

    def initialize(self, context: Any) -> None:
        """Build the app (and its Firestore client) before the first request."""
        try:
            self._api()
        except OutboxError as exc:  # each invocation reports it again
            logger.error("api not configured: %s", exc)

    def handler(self, event: bytes | str | dict[str, Any], context: Any) -> dict[str, Any]:
        """Answer one HTTP request given as Function Compute 3.0's HTTP trigger event."""
        request = json.loads(event) if isinstance(event, (bytes, str)) else event
        try:
            app = self._api()
        except OutboxError as exc:
            logger.error("api not configured: %s", exc)
            return _response(
                problem(503, "not-configured", "Not configured", "the API is not set up")
            )
        return _response(collect(app, environ_of(request)))

    def _api(self) -> WSGIApp:
        with self._lock:
            if self._app is None:
                configuration = self._load()
                configure_logging(configuration.secrets(), thread_exceptions=True)
                self._app = build_front_door(configuration, self._make_app)
            return self._app


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


def _response(answer: FrontDoorAnswer) -> dict[str, Any]:
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
