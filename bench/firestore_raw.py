"""What `firestore_outbox/firestore/raw.py`'s private paths save over the client's public API,
side by side in one process on the emulator: CPU per document to decode a due query's answer
(`raw.run_query` against `query.stream()` then `to_dict()`), and CPU per write to encode a
lease-shaped update with an update-time precondition (`raw.update_pb` against
`WriteBatch.update(..., option=write_option(last_update_time=...))`).

    python bench/firestore_raw.py               # 7 rounds of 500 documents
    python bench/firestore_raw.py --smoke       # one tiny round

Each figure is the median over rounds of `time.process_time()` per document or write; the
query figures include the loopback round trip's CPU on both sides alike.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from collections.abc import Callable
from typing import Any

from firestore_outbox.config.settings import Settings
from google.api_core import retry as retries
from google.cloud import firestore

from firestore_outbox.firestore import raw
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.testing.emulator import FirestoreEmulator

T0 = dt.datetime(2026, 11, 28, 8, 0, tzinfo=dt.timezone.utc)
LEASE = {"status": "PROCESSING", "attempts": 1, "leaseOwner": "relay-1", "leaseUntil": T0}


def _seed(db: firestore.Client, count: int) -> None:
    batch = db.batch()
    for n in range(count):
        ref = db.collection("outbox").document(f"e-{n}")
        payload = {"orderId": f"o-{n}", "items": [{"sku": "A", "qty": 2}], "total": 12.5}
        batch.set(ref, {"status": "PENDING", "attempts": 0, "payload": payload, "at": T0})
        if n % 400 == 399:
            batch.commit()
            batch = db.batch()
    batch.commit()


def _per_item(call: Callable[[], Any], items: int, rounds: int) -> float:
    runs = []
    for _ in range(rounds):
        started = time.process_time()
        call()
        runs.append((time.process_time() - started) / items * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--documents", type=int, default=500)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.documents = 1, 20
    with FirestoreEmulator() as emulator:
        db = get_db_client(Settings(emulator_host=emulator.host_port))
        _seed(db, args.documents)
        query = db.collection("outbox").limit(args.documents)
        retry = retries.Retry(timeout=30)
        refs = [db.collection("outbox").document(f"e-{n}") for n in range(args.documents)]

        def public_reads() -> None:
            [(s.reference, s.update_time, s.to_dict()) for s in query.stream()]

        def public_writes() -> None:
            batch = db.batch()
            for ref in refs:
                batch.update(ref, LEASE, option=db.write_option(last_update_time=T0))

        figures = {
            "decode, raw.run_query (us per document)": lambda: raw.run_query(
                db, query, retry=retry, timeout=30
            ),
            "decode, query.stream() + to_dict() (us per document)": public_reads,
            "encode, raw.update_pb (us per write)": lambda: [
                raw.update_pb(ref, LEASE, T0) for ref in refs
            ],
            "encode, WriteBatch.update with option (us per write)": public_writes,
        }
        for call in figures.values():
            call()  # warm: the channel, the encoders
        for name, call in figures.items():
            print(f"{name}: {_per_item(call, args.documents, args.rounds):.1f}")


if __name__ == "__main__":
    main()
