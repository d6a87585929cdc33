"""A re-drive job beside the relay, in one run on one emulator: how fast a job sends when its
rate does not hold it back, against the relay delivering the same events; and how close a
paced job keeps to its rate.

    python bench/bench_redrive.py                  # 400 events, 3 runs, a paced run at 50/s
    python bench/bench_redrive.py --smoke          # CI: a few events, not kept

Both send to the same local HTTP downstream (the tests' `Receiver`, answering 200 at once),
signed. The relay runs as a timer invocation does (`RELAY_CONCURRENCY` 16 publishing in
parallel); a job sends one event at a time, in order, and writes its progress once a second.
Runs are interleaved so drift hits both alike; the table gives the medians and their ratio.
Loopback figures: they compare the two, not a cloud.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests` from the checkout

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer  # noqa: E402
from firestore_outbox.firestore.client import get_db_client  # noqa: E402
from firestore_outbox.firestore.settings import Settings  # noqa: E402
from firestore_outbox.redrive.selection import Selection  # noqa: E402
from firestore_outbox.redrive.service import Redrive  # noqa: E402
from firestore_outbox.redrive.targets import target_for  # noqa: E402
from firestore_outbox.relay import Relay  # noqa: E402
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator  # noqa: E402
from tests.support.helpers import add_own_event, fast_config  # noqa: E402

SECRET = "bench-signing-secret-0123456789"
PROJECT = "bench-redrive"


def seed(db: Any, settings: Settings, events: int) -> None:
    for n in range(events):
        add_own_event(db, settings, f"ev-{n:05d}", aggregateId=f"agg-{n % 50}")


def one_run(host: str, events: int, paced_rate: float | None) -> dict[str, float]:
    reset_emulator(host, PROJECT)
    settings = Settings(project_id=PROJECT, emulator_host=host)
    db = get_db_client(settings)
    seed(db, settings, events)
    with Receiver(lambda _: ReceiverAnswer(200)) as downstream:
        config = fast_config(
            downstream.url,
            signing_secrets=(SECRET,),
            concurrency=16,
            batch_size=200,
            http_timeout_seconds=5.0,
            lock_timeout_seconds=60.0,
            time_budget_seconds=600.0,
        )
        started = time.perf_counter()
        with Relay(db, settings, config) as relay:
            while len(downstream.received) < events:
                relay.run()
        relay_seconds = time.perf_counter() - started
        redrive = Redrive(db, settings, config)
        job = redrive.start(Selection(), target=target_for(None), rate=10_000, created_by="b")
        started = time.perf_counter()
        report = redrive.run(job.job_id)
        job_seconds = time.perf_counter() - started
        assert report.sent == events, report
        row = {"relay": events / relay_seconds, "job": events / job_seconds}
        if paced_rate:
            arrivals: list[float] = []
            downstream.respond = lambda _: (arrivals.append(time.monotonic()), ReceiverAnswer(200))[
                1
            ]
            paced = redrive.start(
                Selection(), target=target_for(None), rate=paced_rate, created_by="b"
            )
            redrive.run(paced.job_id)
            row["paced"] = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])
        return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paced-rate", type=float, default=50.0)
    parser.add_argument("--smoke", action="store_true", help="a few events, one run")
    args = parser.parse_args()
    events, repeats = (20, 1) if args.smoke else (args.events, args.repeats)
    with FirestoreEmulator() as emulator:
        rows = [one_run(emulator.host_port, events, args.paced_rate) for _ in range(repeats)]
    relay = statistics.median(r["relay"] for r in rows)
    job = statistics.median(r["job"] for r in rows)
    paced = statistics.median(r["paced"] for r in rows)
    print(f"{events} events, {repeats} runs (medians)")
    print(f"relay (16 in parallel)        {relay:8.1f} events/s")
    print(f"re-drive job (one at a time)  {job:8.1f} events/s  ({job / relay:.2f}x the relay)")
    print(
        f"paced job at {args.paced_rate:g}/s           {paced:8.1f} events/s  "
        f"({paced / args.paced_rate:.3f}x its rate)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
