"""Latency of create_new_order on the local Firestore emulator, against the floor: a raw
two-document `WriteBatch` commit of the same order and event documents.

    python bench/bench_create_order.py [--orders N] [--items M]

Uses FIRESTORE_EMULATOR_HOST if set, else starts an emulator for the run. Emulator figures show
the library's own cost plus a loopback round trip, not production Firestore latency.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import bootstrap  # noqa: F401  (the reference application, from this checkout)
from google.cloud.firestore import SERVER_TIMESTAMP
from workloads import contract_event

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.config.shortcuts import load_settings
from firestore_outbox.example import NewOrder
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator


def pending_event(event_id: str, order_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """An `OrderCreated` outbox document as `OutboxRepository.add` writes it, due at once."""
    return {
        **contract_event(event_id, order_id, payload),
        "nextAttemptAt": SERVER_TIMESTAMP,
        "processingInstanceId": None,
        "processedAt": None,
        "lastError": None,
    }


def timed(runs: int, action: Callable[[int], object]) -> list[float]:
    samples = []
    for n in range(runs):
        start = time.perf_counter()
        action(n)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def report(name: str, samples: list[float]) -> float:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    median = statistics.median(samples)
    print(f"{name:34s} n={len(samples):4d}  median {median:7.2f} ms  p95 {p95:7.2f} ms")
    return median


def raw_commit(db: Any, settings: Settings, items: list[dict[str, Any]]) -> None:
    """The same two documents as create_new_order writes, as a bare WriteBatch: no
    validation, no unit of work. The floor create_new_order is held to."""
    order_ref = db.collection(settings.orders_collection).document()
    event_id = str(uuid.uuid4())
    batch = db.batch()
    batch.create(
        order_ref,
        {
            "customerId": "bench-customer",
            "items": items,
            "status": "CREATED",
            "createdAt": SERVER_TIMESTAMP,
            "idempotencyKey": None,
            "requestHash": None,
        },
    )
    payload = {"orderId": order_ref.id, "customerId": "bench-customer", "items": items}
    batch.create(
        db.collection(settings.outbox_collection).document(event_id),
        pending_event(event_id, order_ref.id, payload),
    )
    batch.commit()


def compare(
    db: Any, settings: Settings, orders: int, items: list[dict[str, Any]]
) -> dict[str, Any]:
    """Median milliseconds of create_new_order and of the raw commit, interleaved so that
    both see the same machine; and their ratio."""

    def create(key: str | None) -> FirestoreUnitOfWork:
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order("bench-customer", items, uow, idempotency_key=key)
        return uow

    for _ in range(orders):  # warm up the channel and the emulator's JVM
        create(None)
        raw_commit(db, settings, items)
    ours: list[float] = []
    raw: list[float] = []
    for _ in range(orders):
        ours += timed(1, lambda n: create(None))
        raw += timed(1, lambda n: raw_commit(db, settings, items))
    ours_ms = report("create_new_order, no key", ours)
    raw_ms = report("raw two-document WriteBatch", raw)
    print(f"{'ratio':34s} {ours_ms / raw_ms:.3f}")
    return {
        "orders": orders,
        "createNewOrderMs": round(ours_ms, 3),
        "rawWriteBatchMs": round(raw_ms, 3),
        "ratio": round(ours_ms / raw_ms, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=200)
    parser.add_argument("--items", type=int, default=5)
    args = parser.parse_args()
    items = [{"productId": f"sku-{i}", "quantity": i + 1} for i in range(args.items)]

    with ExitStack() as stack:
        settings: Settings = load_settings()
        if not settings.emulator_host:
            emulator = stack.enter_context(FirestoreEmulator())
            settings = Settings(emulator_host=emulator.host_port)
        db = get_db_client(settings)
        run = uuid.uuid4().hex[:8]

        def create(key: str | None) -> FirestoreUnitOfWork:
            with FirestoreUnitOfWork(db, settings) as uow:
                create_new_order("bench-customer", items, uow, idempotency_key=key)
            return uow

        compare(db, settings, args.orders, items)
        report("validate only (no I/O)", timed(args.orders, lambda n: NewOrder.parse("c", items)))
        report("create, no key", timed(args.orders, lambda n: create(None)))
        report("create, new key", timed(args.orders, lambda n: create(f"{run}-{n}")))
        replayed: list[bool] = []
        replays = timed(args.orders, lambda n: replayed.append(create(f"{run}-{n}").replayed))
        if not all(replayed):
            raise SystemExit("a repeated key was not replayed")
        report("replay of an existing key", replays)


if __name__ == "__main__":
    main()
