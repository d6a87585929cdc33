"""How soon a run delivers with a large backlog (issue 25: "the first events go out within a
second of the run's start"), and where the time before the first delivery goes.

    python bench/bench_first_page.py                      # 20,000 events, 8 s budget
    python bench/bench_first_page.py --events 20000 --budget 8 --repeats 3 --http-timeout 2
    python bench/bench_first_page.py --events 2000 --delay-ms 20   # +40 ms a round trip

Each repeat: a fresh emulator, `--events` due events written by the unit of work, one relay
process-local run with `--budget` seconds and `RELAY_HTTP_TIMEOUT_SECONDS` `--http-timeout`
(2: an attempt starts only while one fits the budget, and the default 10 s does not fit 8 s),
the Function Compute timer's shape: a cold `Relay`, its first run. Reports the seconds from
`Relay.run()` to the first delivery the downstream saw, what the run delivered, and each
Firestore call the relay made before the first delivery (name, start and end from the run's
start), so the time is accounted for. `--delay-ms D` puts the relay's Firestore behind the
delaying proxy (`latency_proxy`, D each way: a cross-cloud link), where the round trips a run
makes one after another, not the emulator's time per query, decide its first delivery.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from latency_proxy import DelayProxy
from workloads import seed

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay import Relay, RelayConfig
from firestore_outbox.testing.emulator import FirestoreEmulator

PROJECT = "bench-first-page"


class Timeline:
    """Calls made from `start`, with their start and end (seconds), until `frozen`."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.calls: list[tuple[str, float, float]] = []
        self.frozen = False
        self._lock = threading.Lock()

    def wrap(self, name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return call(*args, **kwargs)
            finally:
                ended = time.monotonic()
                with self._lock:
                    if not self.frozen:
                        at = (round(began - self.start, 3), round(ended - self.start, 3))
                        self.calls.append((name, *at))

        return timed


def one(events: int, budget: float, http_timeout: float, delay: float) -> dict[str, Any]:
    with FirestoreEmulator() as emulator:
        settings = Settings(project_id=PROJECT, emulator_host=emulator.host_port)
        seed(settings, events)
        host, port = emulator.host_port.rsplit(":", 1)
        with DelayProxy(host, int(port), delay) as proxy:
            far = Settings(project_id=PROJECT, emulator_host=proxy.host_port)
            return _first_run(far, budget, http_timeout)


def _first_run(settings: Settings, budget: float, http_timeout: float) -> dict[str, Any]:
    """One cold relay's first run against `settings`' Firestore, timed (see the module)."""
    first: list[float] = []

    def respond(_: Received) -> ReceiverAnswer:
        if not first:
            first.append(time.monotonic())
        return ReceiverAnswer(200)

    with Receiver(respond, keep=False) as downstream:
        db = get_db_client(settings)
        relay = Relay(
            db,
            settings,
            RelayConfig(
                publisher=HttpSettings(url=downstream.url),
                time_budget_seconds=budget,
                # An attempt starts only if it fits what is left of the budget.
                http_timeout_seconds=http_timeout,
            ),
        )
        timeline = Timeline()
        store = relay.store
        for name in ("run_at", "count_at", "write"):
            setattr(store, name, timeline.wrap(name, getattr(store, name)))
        leases = relay._leases = relay.partition_leases()
        for name in ("claim", "release", "renew_due"):
            setattr(leases, name, timeline.wrap(f"leases.{name}", getattr(leases, name)))
        mode = relay._mode
        for name in ("take", "leave"):
            setattr(mode, name, timeline.wrap(f"mode.{name}", getattr(mode, name)))
        timeline.start = time.monotonic()
        summary = relay.run()
        ended = time.monotonic() - timeline.start
        db.close()
    cut = first[0] - timeline.start if first else float("inf")
    before_first = [c for c in timeline.calls if c[1] < cut]
    return {
        "firstDeliverySeconds": round(first[0] - timeline.start, 3) if first else None,
        "runSeconds": round(ended, 3),
        "processed": summary["processed"],
        "stoppedBy": summary["stoppedBy"],
        "batches": summary["batches"],
        "partitionsClaimed": summary["partitionsClaimed"],
        "releasedUnsent": summary["released"],
        "callsBeforeFirstDelivery": before_first,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--budget", type=float, default=8.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--http-timeout", type=float, default=2.0)
    parser.add_argument("--delay-ms", type=float, default=0.0, help="each way, to Firestore")
    args = parser.parse_args()
    runs = []
    for n in range(args.repeats):
        row = one(args.events, args.budget, args.http_timeout, args.delay_ms / 1000)
        runs.append(row)
        print(json.dumps({"repeat": n + 1, **row}), flush=True)
    firsts = [r["firstDeliverySeconds"] for r in runs if r["firstDeliverySeconds"] is not None]
    print(json.dumps({"medianFirstDeliverySeconds": statistics.median(firsts) if firsts else None}))


if __name__ == "__main__":
    main()
