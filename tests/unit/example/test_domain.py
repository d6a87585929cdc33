from __future__ import annotations

from typing import Any

import pytest

from firestore_outbox.example import InvalidOrder, NewOrder
from firestore_outbox.producer import label_problem

ITEMS = [{"productId": "p1", "quantity": 2}]


@pytest.mark.parametrize(
    ("customer_id", "items", "message"),
    [
        ("", ITEMS, "customer_id must be a non-empty string"),
        ("   ", ITEMS, "customer_id must be a non-empty string"),
        (None, ITEMS, "customer_id must be a non-empty string"),
        (42, ITEMS, "customer_id must be a non-empty string"),
        ("c1", [], "items must not be empty"),
        ("c1", None, "items must be a list"),
        ("c1", "p1", "items must be a list"),
        ("c1", {"productId": "p1", "quantity": 1}, "items must be a list"),
        ("c1", ["p1"], r"items\[0\] must be a mapping"),
        ("c1", [{"quantity": 1}], r"items\[0\].productId must be a non-empty string"),
        ("c1", [{"productId": "", "quantity": 1}], r"items\[0\].productId"),
        ("c1", [{"productId": 7, "quantity": 1}], r"items\[0\].productId"),
        ("c1", [{"productId": "p1"}], r"items\[0\].quantity must be an integer > 0, got None"),
        ("c1", [{"productId": "p1", "quantity": 0}], r"quantity must be an integer > 0, got 0"),
        ("c1", [{"productId": "p1", "quantity": -3}], r"got -3"),
        ("c1", [{"productId": "p1", "quantity": 1.5}], r"got 1.5"),
        ("c1", [{"productId": "p1", "quantity": True}], r"got True"),
        ("c1", [{"productId": "p1", "quantity": "2"}], r"got '2'"),
        ("c1", [*ITEMS, {"productId": "p2", "quantity": 0}], r"items\[1\].quantity"),
        ("c1", [{"productId": "p1", "quantity": 2**63}], r"items\[0\].quantity is outside"),
        ("c1", [{"productId": "p1", "quantity": 1, "price": float("nan")}], "finite"),
        ("c1", [{"productId": "p1", "quantity": 1, "at": object()}], "not JSON-compatible"),
        ("c1", [{"productId": "p1", "quantity": 1, "tags": [[1]]}], "array directly inside"),
        ("c1", [{"productId": "p1", "quantity": 1, 3: "x"}], "not a non-empty string"),
    ],
)
def test_invalid_arguments_raise_invalid_order_naming_the_flaw(
    customer_id: Any, items: Any, message: str
) -> None:
    with pytest.raises(InvalidOrder, match=message) as raised:
        NewOrder.parse(customer_id, items)
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("key", ["", "  ", 12, "k" * 256])
def test_invalid_idempotency_key_is_rejected(key: Any) -> None:
    with pytest.raises(InvalidOrder, match="idempotency_key"):
        NewOrder.parse("c1", ITEMS, key)


def test_items_may_carry_extra_json_values_and_tuples_work() -> None:
    order = NewOrder.parse("c1", ({"productId": "p1", "quantity": 1, "meta": {"gift": True}},))
    assert order.items == [{"productId": "p1", "quantity": 1, "meta": {"gift": True}}]


def test_items_are_copied_so_later_caller_changes_do_not_leak_in() -> None:
    items = [{"productId": "p1", "quantity": 1, "meta": {"note": "a"}}]
    order = NewOrder.parse("c1", items)
    items[0]["meta"]["note"] = "changed"
    assert order.items[0]["meta"] == {"note": "a"}


def test_request_hash_ignores_key_order_but_not_content() -> None:
    a = NewOrder.parse("c1", [{"productId": "p1", "quantity": 1}])
    b = NewOrder.parse("c1", [{"quantity": 1, "productId": "p1"}])
    c = NewOrder.parse("c1", [{"productId": "p1", "quantity": 2}])
    d = NewOrder.parse("c2", [{"productId": "p1", "quantity": 1}])
    assert a.request_hash == b.request_hash
    assert len({a.request_hash, c.request_hash, d.request_hash}) == 3


def test_order_id_is_derived_from_the_key_only_when_there_is_one() -> None:
    assert NewOrder.parse("c1", ITEMS).order_id is None
    first = NewOrder.parse("c1", ITEMS, "key-1").order_id
    assert first == NewOrder.parse("c2", [{"productId": "x", "quantity": 9}], "key-1").order_id
    assert first != NewOrder.parse("c1", ITEMS, "key-2").order_id
    assert first is not None and len(first) == 32 and int(first, 16) >= 0


def test_item_nesting_is_limited_by_the_deeper_event_document() -> None:
    def nested(levels: int) -> Any:
        value: Any = 1
        for _ in range(levels):
            value = {"k": value}
        return value

    # payload.items[i].deep adds 3 levels; Firestore allows 20 in all.
    NewOrder.parse("c1", [{"productId": "p", "quantity": 1, "deep": nested(17)}])
    with pytest.raises(InvalidOrder, match="nested deeper than 20"):
        NewOrder.parse("c1", [{"productId": "p", "quantity": 1, "deep": nested(18)}])


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("order-1", None),
        ("заказ-\U0001f4e6", None),  # beyond Latin-1: percent-encoded on the wire
        ("", "must be a non-empty string"),
        (7, "must be a non-empty string"),
        ("a\udc80", "lone surrogate at index 1"),
        ("a\tb", "U+0009"),
        ("a\x9fb", "U+009F"),
    ],
)
def test_label_problem_names_what_an_id_cannot_hold(value: object, problem: str | None) -> None:
    found = label_problem(value)
    assert found is None if problem is None else problem in str(found)
