"""`outbox relay --follow` as a real process, beside timer-style runs of the same relay."""

from __future__ import annotations

import datetime
import json
import signal
import threading
import time
from collections import Counter
from pathlib import Path

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.e2e.relay.test_relay_processes import start_relay
from tests.support.helpers import (
    add_orders,
    add_raw_event,
    make_relay,
    outbox,
    relay_environment,
    utcnow,
)
from tests.support.overlap import (
    HELD_HTTP_TIMEOUT_SECONDS,
    HELD_LEASE_SECONDS,
    HeldUntilOverlap,
    held_relay_variables,
)


def test_follow_mode_beside_the_timer_relay_delivers_every_event_exactly_once(
    db: firestore.Client, settings: Settings, tmp_path: Path
) -> None:
    with Receiver() as receiver:
        # Held deliveries wait for the other relay: timeouts that outlast the hold.
        variables = relay_environment(
            settings,
            receiver.url,
            RELAY_BATCH_SIZE="20",
            RELAY_CONCURRENCY="4",
            **held_relay_variables(),
        )
        follower = start_relay(variables, tmp_path, "--follow")
        add_orders(db, settings, 1)
        assert receiver.wait_for(1, timeout=30)  # the follower is up and listening
        # Both relays send 4 at a time: from now on every delivery waits until more are in
        # flight than that, so both are delivering at once, however the machine schedules them.
        steady = HeldUntilOverlap(concurrency=4, pace=0.005)
        receiver.respond = steady
        timer = make_relay(
            db,
            settings,
            receiver.url,
            batch_size=20,
            concurrency=4,
            http_timeout_seconds=HELD_HTTP_TIMEOUT_SECONDS,
            lock_timeout_seconds=HELD_LEASE_SECONDS,
        )
        timer_summaries: list[dict[str, int]] = []
        stop = threading.Event()

        def tick() -> None:  # the timer function, firing again and again
            while not stop.is_set():
                timer_summaries.append(timer.run())

        ticker = threading.Thread(target=tick)
        ticker.start()
        expected = set(add_orders(db, settings, 250))  # both relays race for each of these
        deadline = time.monotonic() + 60
        while len({r.event_id for r in receiver.received}) < len(expected):
            assert time.monotonic() < deadline, len(receiver.received)
            time.sleep(0.05)
        stop.set()
        ticker.join()
        follower.send_signal(signal.SIGTERM)
        stdout, stderr = follower.communicate(timeout=30)

    assert follower.returncode == 0, stderr
    follow_summary = json.loads(stdout)
    deliveries = Counter(r.event_id for r in receiver.received)
    assert set(deliveries) == expected
    assert set(deliveries.values()) == {1}, deliveries.most_common(3)
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    timer_processed = sum(s["processed"] for s in timer_summaries)
    assert steady.overlapped
    assert follow_summary["processed"] > 0 and timer_processed > 0  # really side by side
    assert follow_summary["processed"] + timer_processed == len(expected)


def test_follow_mode_delivers_a_new_event_and_a_retry_when_it_falls_due(
    db: firestore.Client, settings: Settings, tmp_path: Path
) -> None:
    with Receiver() as receiver:
        follower = start_relay(relay_environment(settings, receiver.url), tmp_path, "--follow")
        try:
            [first] = add_orders(db, settings, 1)
            assert [r.event_id for r in receiver.wait_for(1, timeout=20)] == [first]
            # Written once the follower is up (it may take seconds to start under load).
            due_soon = utcnow() + datetime.timedelta(seconds=1.5)
            add_raw_event(db, settings, "later", nextAttemptAt=due_soon)
            # The retry is already in the listener's window: only the clock makes it due.
            assert [r.event_id for r in receiver.wait_for(2, timeout=20)] == [first, "later"]
        finally:
            follower.send_signal(signal.SIGTERM)
            stdout, stderr = follower.communicate(timeout=30)
    assert follower.returncode == 0, stderr
    assert json.loads(stdout)["processed"] == 2
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
