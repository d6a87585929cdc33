"""The failure drill: hundreds of orders through relay and receiver processes that are
SIGKILLed at random and restarted, with duplicate and out-of-order deliveries injected.
At the end every order's effect happened exactly once and no event was lost.

`DRILL_SEED=n` replays one run's random choices (process timing still varies).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from google.cloud import firestore
from google.cloud.firestore import FieldFilter

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator, free_port
from tests.support.drill import ChaosProxy, Fleet
from tests.support.helpers import outbox, relay_environment

ORDERS, CUSTOMERS = 300, 25
SECRET = "whsec-drill-0123456789"
RELAYS, RECEIVERS = 2, 2
CHAOS_SECONDS = 40  # then the drill only drains, so its runtime stays bounded
RECEIVER_STARTUP_SECONDS = 2.5  # one receiver is restarting at a time, never all of them
RELAY_VARIABLES = {
    "RELAY_SIGNING_SECRET": SECRET,
    # A relay kill spends an attempt of every event the relay held (one per kill, and a
    # lease is taken back only after RELAY_LOCK_TIMEOUT_SECONDS, so a few over the chaos), a
    # deferral or a timeout one more. Measured after the receiver stopped locking its inbox
    # records: at most 3 attempts of one event (before, a receiver killed inside its inbox
    # transaction could hold an event back for good and needed 100). An event held back
    # for more than about half a minute fails the drill.
    "RELAY_MAX_ATTEMPTS": "20",
    "RELAY_LOCK_TIMEOUT_SECONDS": "5",
    "RELAY_HTTP_TIMEOUT_SECONDS": "1",
    "RELAY_BACKOFF_BASE_SECONDS": "0.05",
    "RELAY_BACKOFF_MAX_SECONDS": "2",
    "RELAY_BATCH_SIZE": "20",
    "RELAY_CONCURRENCY": "4",
    "RELAY_TIME_BUDGET_SECONDS": "6",  # short runs, restarted: successive timer ticks
}


@pytest.fixture
def settings() -> Iterator[Settings]:
    """An emulator of the drill's own: the leases of the processes it kills outlive them,
    and its load stays apart from the other tests."""
    with FirestoreEmulator() as emulator:
        yield Settings(project_id="outbox-drill", emulator_host=emulator.host_port)


@pytest.fixture
def db(settings: Settings) -> firestore.Client:
    return get_db_client(settings)


def place_orders(db: firestore.Client, settings: Settings) -> Counter[str]:
    customers = [f"customer-{n % CUSTOMERS}" for n in range(ORDERS)]

    def place(customer: str) -> None:
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order(customer, [{"productId": "sku-1", "quantity": 1}], uow)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(place, customers))
    return Counter(customers)


def unsettled(db: firestore.Client, settings: Settings) -> int:
    query = db.collection(settings.outbox_collection).where(
        filter=FieldFilter("status", "in", ["PENDING", "PROCESSING"])
    )
    return int(query.count().get()[0][0].value)


def relay_summaries(fleet: Fleet) -> list[dict[str, int]]:
    summaries = []
    for _, log in fleet.exits:
        lines = [line for line in log.read_text().splitlines() if line.startswith("{")]
        summaries += [json.loads(line) for line in lines[-1:]]
    return summaries


def test_drill_kills_relays_and_receivers_and_every_effect_happens_exactly_once(
    db: firestore.Client,
    settings: Settings,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed = int(os.environ.get("DRILL_SEED") or random.randrange(10**6))
    rng = random.Random(seed)
    expected = place_orders(db, settings)
    started = time.monotonic()

    base = {k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "RELAY_"))}
    store = {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
        "LOG_LEVEL": "WARNING",
    }
    ports = [free_port() for _ in range(RECEIVERS)]
    proxy = ChaosProxy([f"http://127.0.0.1:{p}/events" for p in ports], rng, timeout=0.9)
    receivers = Fleet("receiver", {**base, **store, "RECEIVER_SIGNING_SECRET": SECRET}, tmp_path)
    with Receiver(proxy) as front:
        relay_env = {**base, **relay_environment(settings, front.url, **RELAY_VARIABLES)}
        relays = Fleet("relay", {**relay_env, "LOG_LEVEL": "WARNING"}, tmp_path)
        try:
            for port in ports:
                receivers.start("receiver", "--port", str(port))
            next_kill, next_check, left = time.monotonic() + 1.0, 0.0, ORDERS
            last_start = 0.0
            while left:
                now = time.monotonic()
                assert now - started < 240, f"drill stuck with {left} events unsettled"
                relays.reap()
                if len(relays.running) < RELAYS and now - last_start > 0.5:  # timer ticks
                    relays.start("relay")
                    last_start = now
                if now >= next_kill and now - started < CHAOS_SECONDS:
                    fleet = relays if rng.random() < 0.5 else receivers
                    if fleet is receivers and receivers.youngest() < RECEIVER_STARTUP_SECONDS:
                        fleet = relays
                    killed = fleet.kill_one(rng)
                    if killed and fleet is receivers:
                        receivers.start(*killed)  # it takes a second or two to listen again
                    next_kill = now + rng.uniform(0.3, 1.2)
                if now >= next_check:
                    left, next_check = unsettled(db, settings), now + 0.5
                time.sleep(0.05)
            proxy.faults = False
            proxy.wait_for_replays()
            runtime = time.monotonic() - started
        finally:
            relays.stop()
            receivers.stop()
        deliveries = len(front.received)

    events = outbox(db, settings)
    statuses = Counter(e["status"] for e in events.values())
    records = [r.to_dict() or {} for r in db.collection("inbox").get()]
    counts = {d.id: d.get("orders") for d in db.collection("order_counts").get()}
    answers = proxy.counts
    duplicates_delivered = sum(n - 1 for n in proxy.delivered.values())
    absorbed = answers["answer:200:duplicate"]
    summaries = relay_summaries(relays)
    report = {
        "seed": seed,
        "orders": ORDERS,
        "runtimeSeconds": round(runtime, 1),
        "relayProcesses": relays.started,
        "relaysKilled": relays.killed,
        "receiverProcesses": receivers.started,
        "receiversKilled": receivers.killed,
        "deliveriesToProxy": deliveries,
        "deferredOutOfOrder": answers["deferred"],
        "duplicatesInjected": answers["injected"],
        "duplicatesDelivered": duplicates_delivered,
        "duplicatesAbsorbed": absorbed,
        "applied": answers["answer:200:applied"],
        "receiverTimeouts": answers["timeout"],
        "noReceiverUp": answers["no receiver up"],
        "eventsAttemptedMoreThanOnce": sum(e["attempts"] > 1 for e in events.values()),
        "maxAttempts": max(e["attempts"] for e in events.values()),
        "cleanRelayExits": len(summaries),
        "reclaimedInCleanRuns": sum(s.get("reclaimed", 0) for s in summaries),
        "answers": dict(sorted(answers.items())),
    }
    with capsys.disabled():
        print("\ndrill report:", json.dumps(report, indent=1))

    assert statuses == {"PROCESSED": ORDERS}, report  # no event lost, none given up
    assert len(records) == ORDERS and {r["status"] for r in records} == {"SUCCEEDED"}
    assert {r["eventId"] for r in records} == set(events)  # one record per event
    assert counts == dict(expected), report  # every order's effect exactly once
    assert relays.killed and receivers.killed, report
    assert duplicates_delivered and absorbed, report
    assert answers["answer:200:applied"] <= ORDERS, report
