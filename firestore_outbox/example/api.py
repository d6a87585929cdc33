"""The order API as a WSGI app: `POST /orders`, `GET /orders/{orderId}`, `GET /healthz`.

Plain WSGI, no framework: three routes need no router, the Function Compute package stays
without another dependency, and any WSGI server (waitress locally) or adapter (the HTTP
trigger) runs it. `make_api` wraps it in the Idempotency-Key middleware.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from google.api_core.exceptions import GoogleAPIError

from firestore_outbox.errors import CommitFailed, CommitOutcomeUnknown, InvalidInput
from firestore_outbox.example.services import create_new_order
from firestore_outbox.example.uow import OrderUnitOfWork
from firestore_outbox.idempotency import (
    CLAIM,
    Claim,
    FrontDoorAnswer,
    IdempotencyMiddleware,
    KeyRegistry,
    LockLost,
    problem,
    record_answer,
    server_span,
)
from firestore_outbox.producer import bounded_retry, checked_id

if TYPE_CHECKING:
    from google.cloud.firestore import Client, CollectionReference

    from firestore_outbox.idempotency import IdempotencyConfig
    from firestore_outbox.producer import Settings

logger = logging.getLogger(__name__)

JSON = "application/json"
MAX_ORDER_BYTES = 1024 * 1024  # an order and its event must fit Firestore documents anyway
Hook = Callable[[], None]


def make_orders_app(
    db: Client, settings: Settings, *, before_commit: Hook | None = None
) -> Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]:
    """The bare order API (no idempotency); `before_commit` is a test hook."""
    orders = db.collection(settings.orders_collection)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        path = str(environ.get("PATH_INFO", "") or "/")
        if path == "/healthz":
            answer = _json(200, {"status": "ok"}) if method in ("GET", "HEAD") else _not_allowed()
        elif path == "/orders":
            if method == "POST":
                # The front door starts the trace the order's event carries to its consumer.
                with server_span(environ, method, "/orders") as span:
                    answer = _post_order(environ, db, settings, before_commit)
                    record_answer(span, answer.status)
            else:
                answer = _not_allowed()
        elif path.startswith("/orders/") and path.count("/") == 2:
            answer = (
                _get_order(orders, path.split("/")[2], settings.firestore_timeout_seconds)
                if method == "GET"
                else _not_allowed()
            )
        else:
            answer = problem(404, "not-found", "Not found", f"no resource at {path}")
        start_response(answer.status_line, list(answer.headers))
        return [answer.body]

    return app


def make_api(
    db: Client,
    settings: Settings,
    config: IdempotencyConfig,
    *,
    before_commit: Hook | None = None,
) -> IdempotencyMiddleware:
    """The order API behind the Idempotency-Key middleware; `POST /orders` requires a key."""
    registry = KeyRegistry(db, config, timeout=settings.firestore_timeout_seconds)
    app = make_orders_app(db, settings, before_commit=before_commit)
    return IdempotencyMiddleware(app, registry, required=frozenset({("POST", "/orders")}))


def _post_order(
    environ: dict[str, Any], db: Client, settings: Settings, before_commit: Hook | None
) -> FrontDoorAnswer:
    media_type = str(environ.get("CONTENT_TYPE", "")).split(";", 1)[0].strip().lower()
    if media_type != JSON:
        return problem(
            415,
            "unsupported-media-type",
            "Unsupported media type",
            "send the order as application/json",
        )
    try:
        length = int(environ.get("CONTENT_LENGTH", "") or 0)
        if length > MAX_ORDER_BYTES:
            detail = f"an order is at most {MAX_ORDER_BYTES} bytes"
            return problem(413, "content-too-large", "Content too large", detail)
        request = json.loads(environ["wsgi.input"].read(length) or b"null")
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return problem(400, "invalid-json", "Invalid JSON", "the body is not valid JSON")
    if not isinstance(request, dict):
        return problem(400, "invalid-order", "Invalid order", "the body must be a JSON object")
    claim: Claim | None = environ.get(CLAIM)
    try:
        with OrderUnitOfWork(db, settings) as uow:
            customer: Any = request.get("customerId")
            items: Any = request.get("items")
            order_id = create_new_order(customer, items, uow)
            [event_id] = uow.queued_creates(settings.outbox_collection)
            answer = _json(
                201,
                {"orderId": order_id, "eventId": event_id},
                [("Location", f"/orders/{order_id}")],
            )
            if claim is not None:
                claim.complete_in(uow, answer)
            if before_commit is not None:
                before_commit()
    except InvalidInput as exc:  # nothing was written: the message names the flaw, no secret
        return problem(400, "invalid-order", "Invalid order", str(exc))
    except CommitFailed as exc:
        if claim is not None and claim.registry.lost(exc):
            raise LockLost(str(exc)) from exc
        logger.error("the order was not written: %s", exc)
        return problem(503, "not-written", "Not written", "the order was not written; retry")
    except CommitOutcomeUnknown:
        logger.error("Firestore did not say whether the order was written")
        return problem(
            503,
            "outcome-unknown",
            "Outcome unknown",
            "Firestore did not answer in time; retry with the same Idempotency-Key",
        )
    return answer


def _get_order(orders: CollectionReference, order_id: str, timeout: float) -> FrontDoorAnswer:
    try:
        checked_id(order_id, "order id")
    except InvalidInput:
        return problem(404, "order-not-found", "Order not found", "no such order")
    try:
        snapshot = orders.document(order_id).get(retry=bounded_retry(timeout), timeout=timeout)
    except GoogleAPIError:
        return problem(503, "firestore-unavailable", "Service unavailable", "retry later")
    found = snapshot.to_dict() if snapshot.exists else None
    if found is None:
        return problem(404, "order-not-found", "Order not found", "no such order")
    created = found.get("createdAt")
    return _json(
        200,
        {
            "orderId": order_id,
            "customerId": found.get("customerId"),
            "items": found.get("items"),
            "status": found.get("status"),
            "createdAt": created.isoformat() if created is not None else None,
        },
    )


def _json(status: int, value: Any, headers: Iterable[tuple[str, str]] = ()) -> FrontDoorAnswer:
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return FrontDoorAnswer.of(status, [("Content-Type", JSON), *headers], body)


def _not_allowed() -> FrontDoorAnswer:
    return problem(
        405, "method-not-allowed", "Method not allowed", "this method is not served here"
    )
