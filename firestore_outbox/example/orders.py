"""The order and its `OrderCreated` event: validation, fingerprints and document shapes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from firestore_outbox.errors import InvalidInput
from firestore_outbox.fields import AGGREGATE_ID, AGGREGATE_TYPE, EVENT_TYPE, PAYLOAD
from firestore_outbox.producer import json_value_problem, label_problem

MAX_IDEMPOTENCY_KEY_LENGTH = 255
ORDER_CREATED = "OrderCreated"
ORDER_AGGREGATE = "order"
REQUEST_HASH_FIELD = "requestHash"


class OrderStatus(str, Enum):
    CREATED = "CREATED"


class InvalidOrder(InvalidInput):
    """The order's customer id or items are not acceptable."""


@dataclass(frozen=True)
class NewOrder:
    """A validated order request, ready to be written."""

    customer_id: str
    items: list[dict[str, Any]]
    idempotency_key: str | None
    request_hash: str

    @classmethod
    def parse(cls, customer_id: object, items: object, idempotency_key: object = None) -> NewOrder:
        """Validate the arguments of `create_new_order`; raise `InvalidOrder` naming the flaw."""
        problem = label_problem(customer_id)
        if problem or not isinstance(customer_id, str):
            raise InvalidOrder(f"customer_id {problem}")
        clean_items = _parse_items(items)
        if idempotency_key is not None and (
            not isinstance(idempotency_key, str)
            or label_problem(idempotency_key)
            or len(idempotency_key) > MAX_IDEMPOTENCY_KEY_LENGTH
        ):
            raise InvalidOrder(
                "idempotency_key must be None or a non-empty string of at most "
                f"{MAX_IDEMPOTENCY_KEY_LENGTH} characters, valid UTF-8 without control "
                "characters"
            )
        request = {"customerId": customer_id, "items": clean_items}
        return cls(customer_id, clean_items, idempotency_key, _fingerprint(request))

    @property
    def order_id(self) -> str | None:
        """The id an idempotent order must have; None lets Firestore pick one."""
        if self.idempotency_key is None:
            return None
        digest = hashlib.sha256(b"order\0" + self.idempotency_key.encode()).hexdigest()
        return digest[:32]

    def document(self, created_at: object) -> dict[str, Any]:
        return {
            "customerId": self.customer_id,
            "items": self.items,
            "status": OrderStatus.CREATED.value,
            "createdAt": created_at,
            "idempotencyKey": self.idempotency_key,
            REQUEST_HASH_FIELD: self.request_hash,
        }

    def created_event(self, order_id: str) -> dict[str, Any]:
        """The `event_data` that `OutboxRepository.add` turns into an outbox document."""
        return {
            EVENT_TYPE: ORDER_CREATED,
            AGGREGATE_TYPE: ORDER_AGGREGATE,
            AGGREGATE_ID: order_id,
            PAYLOAD: {"orderId": order_id, "customerId": self.customer_id, "items": self.items},
        }


def _parse_items(items: object) -> list[dict[str, Any]]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise InvalidOrder(f"items must be a list of items, got {type(items).__name__}")
    if not items:
        raise InvalidOrder("items must not be empty")
    clean = []
    for index, item in enumerate(items):
        where = f"items[{index}]"
        if not isinstance(item, Mapping):
            raise InvalidOrder(f"{where} must be a mapping, got {type(item).__name__}")
        product_id, quantity = item.get("productId"), item.get("quantity")
        if problem := label_problem(product_id):
            raise InvalidOrder(f"{where}.productId {problem}")
        if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity <= 0:
            raise InvalidOrder(f"{where}.quantity must be an integer > 0, got {quantity!r}")
        # The event stores items one level deeper (payload.items[i]) than the order does.
        problem = json_value_problem(item, where, depth=2)
        if problem:
            raise InvalidOrder(problem)
        clean.append(_plain(item))
    return clean


def _plain(value: Any) -> Any:
    """A deep copy made of dicts and lists, so later changes by the caller cannot leak in."""
    if isinstance(value, Mapping):
        return {key: _plain(element) for key, element in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(element) for element in value]
    return value


def _fingerprint(request: Mapping[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
