"""The relay on the real emulator against a real local HTTP server's refusals: which answers fail
at once and which are retried, the backoff, `Retry-After` up to the cap."""

from __future__ import annotations

import time

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox, run_until


@pytest.mark.parametrize(
    ("status", "retried"),
    [(400, False), (409, False), (422, False), (408, True), (425, True), (429, True), (500, True)],
)
def test_a_4xx_fails_at_once_while_408_425_429_and_5xx_are_retried(
    db: firestore.Client, settings: Settings, receiver: Receiver, status: int, retried: bool
) -> None:
    receiver.respond = lambda _: ReceiverAnswer(status, body=b"no such customer")
    [event_id] = add_orders(db, settings, 1)
    summary = make_relay(db, settings, receiver.url).run()

    event = outbox(db, settings)[event_id]
    assert event["attempts"] == 1 and len(receiver.received) == 1
    assert f"HTTP {status}: no such customer" in event["lastError"]
    if retried:
        assert (event["status"], summary["retried"]) == ("PENDING", 1)
        assert event["nextAttemptAt"] > event["updatedAt"]
    else:
        assert (event["status"], summary["failed"]) == ("FAILED", 1)
        assert event["lastError"].startswith("rejected after attempt 1")


def _slow(_: Received) -> ReceiverAnswer:
    time.sleep(1.0)  # longer than the relay's 0.5 s read timeout
    return ReceiverAnswer(200)


# A refused connection is the channel's fault, not the event's: it spends no attempt
# (tests/integration/publishers/test_channel_failures.py,
# tests/integration/relay/test_relay_breaker.py).
@pytest.mark.parametrize("fault", ["HTTP 503", "timeout"])
def test_retryable_faults_back_off_then_fail_after_max_attempts(
    db: firestore.Client, settings: Settings, receiver: Receiver, fault: str
) -> None:
    url = receiver.url + "?token=s3cret-in-url"
    if fault == "HTTP 503":
        receiver.respond = lambda _: ReceiverAnswer(503)
    else:
        receiver.respond = _slow
    [event_id] = add_orders(db, settings, 1)
    base, cap = 0.5, 1.0
    relay = make_relay(
        db, settings, url, max_attempts=3, backoff_base_seconds=base, backoff_max_seconds=cap
    )

    first = relay.run()
    event = outbox(db, settings)[event_id]
    assert first["retried"] == 1 and (event["status"], event["attempts"]) == ("PENDING", 1)
    # Between the base and the cap, measured from the settle's commit time. The relay picks
    # nextAttemptAt on Firestore's clock just before that write, so on a loaded machine the
    # commit lands a little later: allow 0.3 s of write latency and clock uncertainty.
    delay = (event["nextAttemptAt"] - event["updatedAt"]).total_seconds()
    assert base - 0.3 <= delay <= cap + 0.3

    run_until(relay, lambda: outbox(db, settings)[event_id]["status"] == "FAILED")
    event = outbox(db, settings)[event_id]
    assert event["attempts"] == 3
    assert event["lastError"].startswith("gave up after attempt 3")
    expected = {"HTTP 503": "HTTP 503", "timeout": "Timeout"}
    assert expected[fault] in event["lastError"]
    assert "s3cret" not in event["lastError"]
    assert [r.event_id for r in receiver.received] == [event_id] * 3


def test_retry_after_is_honoured_up_to_the_cap(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    answers = {"polite": "2", "greedy": "3600"}
    receiver.respond = lambda r: ReceiverAnswer(
        429, (("Retry-After", answers[r.json()["orderId"]]),)
    )
    for name in answers:
        add_raw_event(db, settings, name, payload={"orderId": name})
    relay = make_relay(db, settings, receiver.url, backoff_base_seconds=0.1, backoff_max_seconds=5)

    assert relay.run()["retried"] == 2
    events = outbox(db, settings)
    polite, greedy = (
        (events[name]["nextAttemptAt"] - events[name]["updatedAt"]).total_seconds()
        for name in answers
    )
    # nextAttemptAt counts from Firestore's time when the settle was planned; updatedAt is
    # its commit time, which comes after (later still when settles queue up under load).
    assert 2 - 0.25 <= polite <= 5.05
    assert 5 - 0.05 <= greedy <= 5.05
    assert relay.run()["leased"] == 0  # nothing is due again before its time
