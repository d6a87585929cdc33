"""A publisher with a bug that does not raise: it answers something other than a
`PublishResult`. The run must end, each event retried with the bug named, on the emulator."""

from __future__ import annotations

import threading

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.observability.attempt_metrics import AttemptMetrics
from firestore_outbox.publishers.base import Delivery, Publisher, PublishResult
from firestore_outbox.relay import Relay
from tests.support.helpers import add_orders, fast_config, outbox


class AnswersNothing:
    def publish(self, delivery: Delivery) -> None:
        return None  # a bug: a publisher answers a PublishResult


@pytest.mark.parametrize("leases", ["partition", "event"])
def test_a_publisher_answering_no_result_has_its_events_retried_and_the_run_ends(
    db: firestore.Client, settings: Settings, leases: str
) -> None:
    ids = add_orders(db, settings, 3)
    run_to_its_end(db, settings, leases, AnswersNothing())  # type: ignore[arg-type]
    events = outbox(db, settings)
    for event_id in ids:
        assert (events[event_id]["status"], events[event_id]["attempts"]) == ("PENDING", 1)
        assert "TypeError: the publisher answered NoneType" in events[event_id]["lastError"]


@pytest.mark.parametrize("leases", ["partition", "event"])
def test_an_attempt_whose_own_code_raises_is_retried_and_the_run_ends(
    db: firestore.Client, settings: Settings, leases: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("a bug in recording the attempt")

    monkeypatch.setattr(AttemptMetrics, "record", broken)
    ids = add_orders(db, settings, 3)
    run_to_its_end(db, settings, leases, Delivers())
    events = outbox(db, settings)
    for event_id in ids:
        assert events[event_id]["lastError"] == "attempt 1: the attempt raised RuntimeError"


class Delivers:
    def publish(self, delivery: Delivery) -> PublishResult:
        return PublishResult.delivered()


def run_to_its_end(
    db: firestore.Client, settings: Settings, leases: str, publisher: Publisher
) -> None:
    """One run over three events with a 5 s budget: it must end, each event retried."""
    config = fast_config("http://127.0.0.1:9/unused", time_budget_seconds=5.0, leases=leases)
    relay = Relay(db, settings, config, publisher=publisher)
    ran: dict[str, dict[str, object]] = {}
    run = threading.Thread(target=lambda: ran.update(summary=relay.run()), daemon=True)
    run.start()
    run.join(20)
    assert not run.is_alive(), "the run did not end"
    summary = ran["summary"]
    assert (summary["status"], summary["retried"]) == ("ok", 3), summary
