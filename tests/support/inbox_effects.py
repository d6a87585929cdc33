"""Effects for the inbox's tests on the emulator: a counter incremented in the inbox's
transaction, its value, and work run from several threads at once."""

from __future__ import annotations

import threading
from typing import Any

from google.cloud import firestore

SOURCE = "//firestore.googleapis.com/projects/p/databases/(default)/documents/outbox"


def counter_effect(db: firestore.Client, name: str = "c-1") -> Any:
    """An effect for `process_in_transaction`: `orders` + 1 in `order_counts/{name}`."""

    def effect(transaction: firestore.Transaction) -> str:
        ref = db.collection("order_counts").document(name)
        transaction.set(ref, {"orders": firestore.Increment(1)}, merge=True)
        return "counted"

    return effect


def count(db: firestore.Client, name: str = "c-1") -> int:
    """How many times `counter_effect` was applied to `name`."""
    data = db.collection("order_counts").document(name).get().to_dict() or {}
    return int(data.get("orders", 0))


def in_parallel(n: int, work: Any) -> list[Any]:
    """`work()` in `n` threads released together; each result, or the exception it raised."""
    start = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work()
        except Exception as exc:  # reported in the assertion below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
