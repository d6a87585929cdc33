"""The relay's side of a broken channel, of a publisher that raises, and of each attempt's
deadline: real emulator, real local HTTP downstream where one is claimed."""

from __future__ import annotations

import logging
import time

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, PublishResult
from firestore_outbox.relay import Relay
from firestore_outbox.relay.config import SETTLE_ALLOWANCE_SECONDS
from tests.support.helpers import add_orders, fast_config, outbox


def test_a_downstream_answering_401_stops_the_run_and_spends_no_attempt(
    db: firestore.Client, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    event_ids = add_orders(db, settings, 6)
    with Receiver(lambda _: ReceiverAnswer(401, body=b"bad signature")) as downstream:
        config = fast_config(downstream.url, concurrency=1)  # RELAY_BREAKER_THRESHOLD: 3
        relay = Relay(db, settings, config)  # the real HTTP publisher: 401 is CHANNEL
        with caplog.at_level(logging.ERROR, logger="firestore_outbox.relay"):
            summary = relay.run()
        sent = len(downstream.received)

    events = outbox(db, settings)
    assert (summary["status"], summary["stoppedBy"], summary["channel"]) == (
        "ok",
        "channel",
        "HTTP 401",
    ), summary
    assert sent == 3  # the threshold, then nothing more was sent
    # Everything taken was handed back (with partition leases an event is taken when its
    # publish starts, so the ones never started are not counted as released).
    assert summary["released"] == summary["leased"] >= 3
    assert (summary["failed"], summary["retried"]) == (0, 0)
    assert {(events[e]["status"], events[e]["attempts"]) for e in event_ids} == {("PENDING", 0)}
    broken = [r for r in caplog.records if r.structured["event"] == "relay.channel_broken"]
    assert len(broken) == 1 and broken[0].structured["errorClass"] == "HTTP 401"


class Raising:
    def __init__(self, text: str) -> None:
        self.text = text

    def publish(self, delivery: Delivery) -> PublishResult:
        raise RuntimeError(self.text)


def test_a_publisher_exception_reaches_last_error_masked(
    db: firestore.Client, settings: Settings
) -> None:
    [event_id] = add_orders(db, settings, 1)
    url = "http://127.0.0.1:9/hooks/tok-5ecret-path?key=tok-5ecret-query"
    config = fast_config(url, signing_secrets=("whsec-5ecret-signing",))
    leak = f"could not reach {url} signed with whsec-5ecret-signing"
    summary = Relay(db, settings, config, publisher=Raising(leak)).run()

    last_error = outbox(db, settings)[event_id]["lastError"]
    assert summary["retried"] == 1 and last_error.startswith("attempt 1: RuntimeError: could")
    assert "5ecret" not in last_error and "***" in last_error


class Recording:
    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []

    def publish(self, delivery: Delivery) -> PublishResult:
        self.deliveries.append(delivery)
        return PublishResult.delivered()


@pytest.mark.parametrize(("budget", "lock"), [(5.0, 30.0), (30.0, 5.0)])
def test_every_delivery_carries_a_deadline_within_the_budget_and_the_lease(
    db: firestore.Client, settings: Settings, budget: float, lock: float
) -> None:
    add_orders(db, settings, 3)
    config = fast_config(
        "http://127.0.0.1:9/unused", time_budget_seconds=budget, lock_timeout_seconds=lock
    )
    publisher = Recording()
    started = time.monotonic()
    summary = Relay(db, settings, config, publisher=publisher).run()
    ended = time.monotonic()

    assert summary["processed"] == 3
    # The run started and leased within [started, ended]: the deadline is the earlier of
    # its budget and the lease, less the time kept to settle.
    bound = min(budget, lock) - SETTLE_ALLOWANCE_SECONDS
    for delivery in publisher.deliveries:
        assert delivery.deadline is not None, "no deadline: an attempt could outlive its lease"
        assert started + bound <= delivery.deadline <= ended + bound
