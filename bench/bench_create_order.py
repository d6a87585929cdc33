"""Latency of create_new_order on the local Firestore emulator.

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

from app.config import Settings, load_settings
from app.domain import NewOrder
from app.emulator import FirestoreEmulator
from app.firestore_client import get_db_client
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork


def timed(runs: int, action: Callable[[int], object]) -> list[float]:
    samples = []
    for n in range(runs):
        start = time.perf_counter()
        action(n)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def report(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(
        f"{name:34s} n={len(samples):4d}  median {statistics.median(samples):7.2f} ms  "
        f"p95 {p95:7.2f} ms"
    )


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

        for _ in range(args.orders):  # warm up the channel and the emulator's JVM
            create(None)
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
