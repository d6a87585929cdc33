"""Firestore frozen mid-drain (SIGSTOP on the session's second emulator): once settles stop
landing, nothing more is published that could not be settled, and `unsettled` counts every
event delivered and not settled."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import grpc
import pytest

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay import Relay, RelayConfig
from firestore_outbox.testing.emulator import FirestoreEmulator
from firestore_outbox.testing.metering import intercept
from tests.support.helpers import add_orders, fast_config, outbox

CONCURRENCY = 4


def frozen_config(url: str, *, budget: float, firestore_timeout: float) -> RelayConfig:
    """Two partitions of 40 events read in pages of 40: when Firestore freezes, many events
    are read and waiting to be published, as in any backlog."""
    return fast_config(
        url,
        firestore_timeout_seconds=firestore_timeout,
        http_timeout_seconds=2.0,
        lock_timeout_seconds=30.0,
        batch_size=40,
        partitions=2,
        partitions_per_claim=2,
        concurrency=CONCURRENCY,
        time_budget_seconds=budget,
    )


def test_a_frozen_firestore_stops_publishing_and_counts_every_unsettled_delivery(
    monkeypatch: pytest.MonkeyPatch, pausable_emulator: FirestoreEmulator
) -> None:
    # Two partitions of 40 events, read in pages of 40: when Firestore freezes, many events
    # are read and waiting to be published, as in any backlog.
    monkeypatch.setenv("RELAY_PARTITIONS", "2")  # the writers agree with the relay
    emulator = pausable_emulator
    with Receiver() as receiver:
        settings = Settings(project_id="outbox-freeze", emulator_host=emulator.host_port)
        db = get_db_client(settings)
        add_orders(db, settings, 80)
        arrived: list[float] = []
        lock = threading.Lock()

        def slow_then_freeze(_: Received) -> ReceiverAnswer:
            with lock:
                arrived.append(time.monotonic())
                if len(arrived) == 10:
                    emulator.pause()  # Firestore freezes; this delivery still gets its 2xx
            time.sleep(0.3)  # a downstream slower than a settle: publishing would go on
            return ReceiverAnswer(200)

        receiver.respond = slow_then_freeze
        config = frozen_config(receiver.url, budget=10.0, firestore_timeout=2.0)
        relay = Relay(db, settings, config)
        failed_at: list[float] = []
        write = relay.store.write

        def noted_write(*args: Any, **kwargs: Any) -> Any:
            try:
                return write(*args, **kwargs)
            except Exception:
                failed_at.append(time.monotonic())
                raise

        relay.store.write = noted_write  # type: ignore[method-assign]
        try:
            summary = relay.run()
        finally:
            emulator.resume()
        events = outbox(db, settings)

    assert summary["status"] == "error", summary
    assert failed_at, "no settle failed"
    # Publishes already under way when the first settle failed may still arrive; none after.
    after = [t for t in arrived if t > failed_at[0]]
    assert len(after) <= CONCURRENCY, (len(after), len(arrived), summary)
    delivered = {str(r.event_id) for r in receiver.received}
    not_settled = {e for e in delivered if events[e]["status"] != "PROCESSED"}
    # (A settle sent into the freeze may still land once Firestore wakes: counted, not seen.)
    assert summary["unsettled"] >= len(not_settled) > 0, (summary, len(not_settled))


class Deadlines(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Notes when each Firestore call was sent, and by when it must end (its gRPC timeout)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float, float | None]] = []

    def _note(self, continuation: Any, details: Any, request: Any) -> Any:
        method = str(details.method).rsplit("/", 1)[-1]
        self.calls.append((method, time.monotonic(), details.timeout))
        return continuation(details, request)

    intercept_unary_unary = _note
    intercept_unary_stream = _note


def test_with_firestore_frozen_every_call_ends_within_budget_and_firestore_timeout(
    monkeypatch: pytest.MonkeyPatch, pausable_emulator: FirestoreEmulator
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", "2")
    budget, firestore_timeout = 6.0, 2.0
    emulator = pausable_emulator
    with Receiver() as receiver:
        settings = Settings(project_id="outbox-envelope", emulator_host=emulator.host_port)
        add_orders(get_db_client(settings), settings, 80)
        relay_db = get_db_client(settings)
        deadlines = Deadlines()
        intercept(relay_db, deadlines)
        config = frozen_config(receiver.url, budget=budget, firestore_timeout=firestore_timeout)
        count = itertools.count(1)

        def freeze_at_the_tenth(_: Received) -> ReceiverAnswer:
            if next(count) == 10:
                emulator.pause()
            time.sleep(0.3)
            return ReceiverAnswer(200)

        receiver.respond = freeze_at_the_tenth
        started = time.monotonic()
        try:
            summary = Relay(relay_db, settings, config).run()
        finally:
            emulator.resume()

    assert summary["status"] == "error", summary
    envelope_end = started + budget + firestore_timeout
    # (0.25 s: the run starts a moment after `started`, and its envelope with it.)
    late = [
        (method, round(sent - started, 2), timeout)
        for method, sent, timeout in deadlines.calls
        if timeout is None or sent + timeout > envelope_end + 0.25
    ]
    assert late == [], late
