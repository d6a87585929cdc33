"""A long backlog run on the local Firestore emulator: one relay run over a backlog larger than
its budget can deliver (by default 20,000 events and a 15 s budget), reporting how far it got,
how it ended and how many of its reads were sent again.

    python bench/bench_backlog_budget.py [--events 20000] [--budget 15] [--firestore-timeout 5]
                                         [--http-timeout 1]

The run must deliver until its budget and end `stoppedBy: budget`, never `status: error` on a
read that took longer than `RELAY_FIRESTORE_TIMEOUT_SECONDS` (such reads are sent again:
`readRetries`). The downstream is a local receiver answering 200 at once. Emulator figures on
this machine: a loopback round trip per call, not production latency.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import ExitStack

from local_outbox import local_outbox, seed

from firestore_outbox import Relay, RelayConfig
from firestore_outbox.publishers import HttpSettings

REPORTED = (
    "status",
    "stoppedBy",
    "processed",
    "failed",
    "retried",
    "readRetries",
    "partitionsUnread",
    "partitionsClaimed",
    "error",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--budget", type=float, default=15.0, help="seconds (default 15)")
    parser.add_argument("--firestore-timeout", type=float, default=5.0)
    # The drain stops an attempt's time (connect and read timeout, the settle: 2.5 s) before
    # its budget ends: a short one leaves most of the budget to delivering.
    parser.add_argument("--http-timeout", type=float, default=1.0)
    args = parser.parse_args()
    with ExitStack() as stack:
        outbox = local_outbox(stack, "bench-backlog-budget")
        db, settings, receiver = outbox.db, outbox.settings, outbox.receiver
        started = time.perf_counter()
        seed(outbox, args.events)
        print(f"seeded {args.events} events in {time.perf_counter() - started:.1f} s", flush=True)
        config = RelayConfig(
            publisher=HttpSettings(url=receiver.url),
            time_budget_seconds=args.budget,
            firestore_timeout_seconds=args.firestore_timeout,
            http_timeout_seconds=args.http_timeout,
        )
        with Relay(db, settings, config) as relay:
            started = time.perf_counter()
            summary = relay.run().to_json()
            took = time.perf_counter() - started
        delivered = len({r.event_id for r in receiver.received})
        report = {name: summary.get(name) for name in REPORTED}
        report.update(
            seconds=round(took, 2),
            eventsPerSecond=round(summary["processed"] / took, 1),
            deliveredDistinct=delivered,
            backlog=args.events,
            budgetSeconds=args.budget,
        )
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
