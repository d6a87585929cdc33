"""The wire rules every publisher shares, the payload encoding, and the backoff."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from firestore_outbox.publishers.base import (
    MAX_ERROR_LENGTH,
    Delivery,
    Outcome,
    bounded_error,
    classify_status,
    cloudevent_headers,
    parse_retry_after,
)
from firestore_outbox.relay.backoff import backoff_delay
from firestore_outbox.relay.events import OutboxEvent, PoisonEvent, encode_json, rfc3339
from tests.support.helpers import NOW, document


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, Outcome.DELIVERED),
        (202, Outcome.DELIVERED),
        (204, Outcome.DELIVERED),
        (400, Outcome.REJECTED),
        (401, Outcome.CHANNEL),
        (403, Outcome.CHANNEL),
        (404, Outcome.CHANNEL),
        (405, Outcome.CHANNEL),
        (413, Outcome.REJECTED),
        (415, Outcome.REJECTED),
        (409, Outcome.REJECTED),
        (422, Outcome.REJECTED),
        (408, Outcome.RETRY),
        (425, Outcome.RETRY),
        (429, Outcome.RETRY),
        (500, Outcome.RETRY),
        (502, Outcome.RETRY),
        (503, Outcome.RETRY),
        (599, Outcome.RETRY),
        (301, Outcome.RETRY),  # a redirect is not followed, nor taken for a final answer
    ],
)
def test_answers_are_classified_as_the_contract_says(status: int, outcome: Outcome) -> None:
    assert classify_status(status) is outcome


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("Sat, 21 Nov 2026 08:00:30 GMT", 30.0),
        ("Sat, 21 Nov 2026 07:00:00 GMT", 0.0),  # in the past: no extra wait
        ("soon", None),
        ("-5", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(
    header: str | None, seconds: float | None
) -> None:
    assert parse_retry_after(header, now=NOW) == seconds


def test_cloudevent_headers_carry_the_event_id_twice() -> None:
    delivery = Delivery("e-1", "OrderCreated", "/shop", "order-9", "2026-11-21T08:00:00Z", b"{}", 1)
    assert cloudevent_headers(delivery) == {
        "Content-Type": "application/json",
        "ce-specversion": "1.0",
        "ce-id": "e-1",
        "ce-type": "OrderCreated",
        "ce-source": "/shop",
        "ce-time": "2026-11-21T08:00:00Z",
        "ce-subject": "order-9",
        "Idempotency-Key": "e-1",
    }


def test_errors_are_one_bounded_line_without_secrets() -> None:
    text = "refused\n  url: /hook?token=abc123 " + "x" * 2000
    error = bounded_error(text, ["/hook?token=abc123", "abc123"])
    assert "abc123" not in error and "\n" not in error
    assert error.startswith("refused url: *** x") and len(error) == MAX_ERROR_LENGTH


def test_firestore_values_encode_to_json() -> None:
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    assert encode_json({"at": moment, "b": b"hi", "n": None, "u": "ü"}) == (
        '{"at":"2026-01-01T19:04:05.000006Z","b":"aGk=","n":null,"u":"ü"}'.encode()
    )
    assert rfc3339(dt.datetime(2026, 1, 1)) == "2026-01-01T00:00:00.000000Z"  # naive means UTC
    for bad in (float("nan"), float("inf"), object()):
        with pytest.raises((TypeError, ValueError)):
            encode_json({"x": bad})


def test_a_well_formed_document_becomes_an_event_with_its_body() -> None:
    event = OutboxEvent.from_document("e-1", document())
    assert (event.event_id, event.aggregate_id, event.attempts) == ("e-1", "o-1", 2)
    assert event.body == b'{"orderId":"o-1"}'


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"eventId": None}, "eventId must equal the document id"),
        ({"eventType": ""}, "eventType must be a non-empty string"),
        ({"aggregateType": 3}, "aggregateType must be a non-empty string"),
        ({"aggregateId": None}, "aggregateId must be a non-empty string"),
        ({"createdAt": "2026-01-01"}, "createdAt must be a timestamp"),
        ({"attempts": True}, "attempts must be a whole number"),
        ({"attempts": -1}, "attempts must be a whole number"),
        ({"payload": ["a"]}, "payload must be a map, got list"),
        ({"payload": {"x": float("inf")}}, "payload cannot be encoded as JSON"),
    ],
)
def test_a_malformed_document_is_poison_with_a_reason(
    changes: dict[str, object], reason: str
) -> None:
    with pytest.raises(PoisonEvent, match=reason):
        OutboxEvent.from_document("e-1", document(**changes))


def test_backoff_grows_with_full_jitter_between_base_and_cap() -> None:
    rng = random.Random(7)
    for attempts in range(1, 12):
        ceiling = min(60.0, 2.0 * 2**attempts)
        delays = [backoff_delay(attempts, base=2, cap=60, rng=rng) for _ in range(300)]
        assert all(2 <= d <= ceiling for d in delays)
        assert max(delays) > 0.8 * ceiling  # the whole range is used, not just its floor
    assert backoff_delay(10_000, base=2, cap=60, rng=rng) <= 60  # no overflow


def test_retry_after_raises_the_delay_but_never_past_the_cap() -> None:
    rng = random.Random(1)
    assert backoff_delay(1, base=1, cap=30, retry_after=20, rng=rng) == 20
    assert backoff_delay(1, base=1, cap=30, retry_after=3600, rng=rng) == 30
    assert 1 <= backoff_delay(1, base=1, cap=30, retry_after=0, rng=rng) <= 2
