"""Relays as real processes (`outbox relay`): killed mid-delivery, and several at once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import FAST, add_orders, make_relay, outbox, relay_environment, run_until
from tests.support.overlap import HeldUntilOverlap, held_relay_variables

OUTBOX = shutil.which("outbox") or os.path.join(os.path.dirname(sys.executable), "outbox")


def start_relay(variables: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "RELAY_"))}
    env.update(variables, LOG_LEVEL="WARNING")
    return subprocess.Popen(
        [OUTBOX, "relay", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def killed_on_first_delivery(
    settings: Settings, receiver: Receiver, tmp_path: Path, **variables: str
) -> str:
    """Run `outbox relay` (one publish at a time) and SIGKILL it as its first delivery
    arrives: the event was delivered and its settle never will be. Returns that event's id."""
    relays: list[subprocess.Popen[str]] = []
    killed = threading.Event()

    def kill_on_first_delivery(request: Received) -> ReceiverAnswer:
        if not killed.is_set():
            os.kill(relays[0].pid, signal.SIGKILL)
            killed.set()
        return ReceiverAnswer(200)

    receiver.respond = kill_on_first_delivery
    environment = relay_environment(settings, receiver.url, RELAY_CONCURRENCY="1", **variables)
    relays.append(start_relay(environment, tmp_path))
    relays[0].wait(timeout=60)
    assert relays[0].returncode == -signal.SIGKILL
    return str(receiver.received[0].event_id)


def test_a_relay_killed_between_delivery_and_settle_redelivers_after_the_lock_timeout(
    db: firestore.Client, settings: Settings, receiver: Receiver, tmp_path: Path
) -> None:
    event_ids = add_orders(db, settings, 3)
    first = killed_on_first_delivery(settings, receiver, tmp_path, RELAY_LEASES="event")
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSING"}

    relay = make_relay(db, settings, receiver.url, leases="event")
    assert relay.run()["leased"] == 0  # the leases have not expired yet
    time.sleep(FAST.lock_timeout_seconds)
    run_until(relay, lambda: {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"})

    deliveries = Counter(r.event_id for r in receiver.received)
    assert deliveries[first] == 2  # delivered again, with the same ce-id
    assert sorted(deliveries) == event_ids
    events = outbox(db, settings)
    assert events[first]["attempts"] == 2
    assert "abandoned during attempt 1" in events[first]["lastError"]


def test_a_relay_killed_holding_partitions_is_taken_over_after_the_lock_timeout(
    db: firestore.Client, settings: Settings, receiver: Receiver, tmp_path: Path
) -> None:
    event_ids = add_orders(db, settings, 3)
    # It claims every partition at once, so none is left for the next relay until expiry.
    first = killed_on_first_delivery(settings, receiver, tmp_path, RELAY_PARTITIONS_PER_CLAIM="16")
    # No lease was written on any event: they wait as they were, in partitions still held.
    assert {(e["status"], e["attempts"]) for e in outbox(db, settings).values()} == {("PENDING", 0)}

    relay = make_relay(db, settings, receiver.url)
    summary = relay.run()
    assert (summary["leased"], summary["partitionsClaimed"]) == (0, 0)  # not expired yet
    time.sleep(FAST.lock_timeout_seconds)
    run_until(relay, lambda: {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"})

    deliveries = Counter(r.event_id for r in receiver.received)
    assert deliveries[first] == 2  # delivered again, with the same ce-id
    assert sorted(deliveries) == event_ids
    # The killed attempt was never written down: only the settle counts an attempt.
    assert outbox(db, settings)[first]["attempts"] == 1


def test_several_relay_processes_deliver_every_event_exactly_once(
    db: firestore.Client, settings: Settings, tmp_path: Path
) -> None:
    # Every delivery waits until more are in flight than one relay sends (4): two or more
    # relays are delivering at once, however late the machine starts them. The first ones
    # wait as long as the others take to start (up to `HeldUntilOverlap.WAIT_SECONDS`): the
    # tests' 0.5 s HTTP timeout gave up on them under load (retried, delivered twice or
    # left PENDING), and its 3 s partition lease, renewed with 1.8 s left, had heads handed
    # back unsent when a busy machine renewed 0.3 s late. Timeouts and a lease of a real
    # deployment's proportions: what the test forces is the overlap, nothing else.
    steady = HeldUntilOverlap(concurrency=4, pace=0.02)
    event_ids = add_orders(db, settings, 400)
    with Receiver(steady) as receiver:
        variables = relay_environment(
            settings,
            receiver.url,
            RELAY_BATCH_SIZE="25",
            RELAY_CONCURRENCY="4",
            **held_relay_variables(),
        )
        relays = [start_relay(variables, tmp_path) for _ in range(4)]
        outputs = [relay.communicate(timeout=120) for relay in relays]

    summaries = []
    for relay, (stdout, stderr) in zip(relays, outputs, strict=True):
        assert relay.returncode == 0, stderr
        summaries.append(json.loads(stdout))
    deliveries = Counter(r.event_id for r in receiver.received)
    assert sorted(deliveries) == event_ids
    assert set(deliveries.values()) == {1}, deliveries.most_common(3)
    # On failure, say which counts explain it (an event delivered and not settled is
    # `unsettled` in its relay's summary).
    counts = [
        {
            k: s[k]
            for k in ("stoppedBy", "processed", "retried", "released", "unsettled", "lostLeases")
        }
        for s in summaries
    ]
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}, counts
    assert sum(s["processed"] for s in summaries) == 400
    assert steady.overlapped
    assert sum(1 for s in summaries if s["processed"]) >= 2  # they really ran side by side
