"""The relay's other measures: follow mode's commit-to-delivery latency, peak memory
against the backlog, and `create_new_order` against a raw batch.

    python bench/bench_follow.py           # writes bench/results/follow.json
    python bench/bench_follow.py --smoke   # CI: a few seconds of each, figures not kept

Each part gets an emulator of its own (after a long run the emulator's listeners slowed to
a stop in one run); the smoke run shares one. Emulator figures: loopback round trips and a
local JVM, not production latency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import bootstrap  # noqa: F401  (the reference application, from this checkout)
from bench_create_order import compare
from google.cloud.firestore import FieldFilter
from runs import downstream
from workloads import seed

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay import Relay, RelayConfig
from firestore_outbox.relay.follow.follower import Follower
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator
from firestore_outbox.testing.metering import meter

HERE = Path(__file__).resolve().parent
PROJECT = "bench-outbox"


@contextmanager
def emulated() -> Iterator[Settings]:
    with FirestoreEmulator() as emulator:
        yield Settings(project_id=PROJECT, emulator_host=emulator.host_port)


def relay_config(url: str, concurrency: int, batch_size: int) -> RelayConfig:
    return RelayConfig(
        publisher=HttpSettings(url=url),
        concurrency=concurrency,
        batch_size=batch_size,
        time_budget_seconds=3600.0,
    )


def follow_latency(args: argparse.Namespace, settings: Settings) -> dict[str, Any]:
    """`outbox relay --follow`'s worker while orders commit at `--follow-rate` per second:
    commit-to-delivery latency as the downstream sees it (from `ce-time`)."""
    reset_emulator(str(settings.emulator_host), PROJECT)
    events = round(args.follow_rate * args.follow_seconds)
    writer = get_db_client(settings)
    items = [{"productId": "sku-1", "quantity": 1}]
    with downstream(0) as down:
        db = get_db_client(settings)
        counts = meter(db)
        config = relay_config(down["url"], 16, args.batch_size)
        follower = Follower(Relay(db, settings, config))
        summary: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: summary.update(follower.run()))
        worker.start()
        time.sleep(1.0)  # the listener's first (empty) snapshot
        started = time.perf_counter()
        for n in range(events):
            time.sleep(max(0.0, started + n / args.follow_rate - time.perf_counter()))
            with FirestoreUnitOfWork(writer, settings) as uow:
                create_new_order(f"customer-{n}", items, uow)
        deadline = time.monotonic() + 30
        while follower_processed(writer, settings) < events and time.monotonic() < deadline:
            time.sleep(0.1)
        follower.stop()
        worker.join()
    writer.close()
    db.close()
    latencies = sorted(down.get("latenciesMs", []))
    if len(latencies) != events or down.get("distinct") != events:
        raise SystemExit(f"follow: {events} committed, downstream saw {down.get('deliveries')}")
    centiles = statistics.quantiles(latencies, n=100, method="inclusive")
    ops = counts.snapshot()
    result = {
        "rate": args.follow_rate,
        "events": events,
        "p50": round(statistics.median(latencies), 1),
        "p90": round(centiles[89], 1),
        "p99": round(centiles[98], 1),
        "max": round(latencies[-1], 1),
        "readsPerEvent": round(ops.get("reads", 0) / events, 3),
        "writesPerEvent": round(ops.get("writes", 0) / events, 3),
        "latenciesMs": latencies,
    }
    print(
        f"  follow at {args.follow_rate:g}/s: p50 {result['p50']} ms, p99 {result['p99']} ms, "
        f"max {result['max']} ms, reads/ev {result['readsPerEvent']}",
        flush=True,
    )
    return result


def follower_processed(db: Any, settings: Settings) -> int:
    outbox = db.collection(settings.outbox_collection)
    done = outbox.where(filter=FieldFilter("status", "==", "PROCESSED")).count().get()
    return int(done[0][0].value)


def peak_memory(args: argparse.Namespace, settings: Settings) -> list[dict[str, Any]]:
    """Peak RSS of a relay process draining for `--memory-seconds` from each backlog."""
    rows = []
    for backlog in args.memory_backlogs:
        reset_emulator(str(settings.emulator_host), PROJECT)
        seed(settings, backlog)
        with downstream(0) as down:
            command = [
                sys.executable,
                str(HERE / "relay_memory.py"),
                str(settings.emulator_host),
                PROJECT,
                down["url"],
                str(args.memory_seconds),
            ]
            output = subprocess.run(command, capture_output=True, text=True, check=True)
        row = {"backlog": backlog, **json.loads(output.stdout.strip().splitlines()[-1])}
        print(f"  memory: backlog {backlog:,}: peak {row['maxRssKb'] / 1024:.1f} MiB", flush=True)
        rows.append(row)
    return rows


def numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch-size", type=int, default=RelayConfig.batch_size)
    parser.add_argument("--follow-rate", type=float, default=100.0, help="events/s")
    parser.add_argument("--follow-seconds", type=float, default=20.0)
    parser.add_argument("--memory-backlogs", type=numbers, default=[5000, 50000])
    parser.add_argument("--memory-seconds", type=float, default=10.0)
    parser.add_argument("--orders", type=int, default=500, help="create_new_order samples")
    parser.add_argument("--out", default=str(HERE / "results" / "follow.json"))
    parser.add_argument("--smoke", action="store_true", help="a few seconds of each")
    args = parser.parse_args()
    if args.smoke:
        args.follow_rate, args.follow_seconds, args.orders = 20.0, 1.0, 10
        args.memory_backlogs, args.memory_seconds = [50, 100], 0.5
        args.out = str(Path(tempfile.mkdtemp(prefix="bench-follow-")) / "follow.json")
    started = time.time()
    with ExitStack() as stack:
        shared = stack.enter_context(emulated()) if args.smoke else None

        def part() -> Any:
            return nullcontext(shared) if shared else emulated()

        with part() as settings:
            follow = follow_latency(args, settings)
        with part() as settings:
            memory = peak_memory(args, settings)
        with part() as settings:
            db = get_db_client(settings)
            items = [{"productId": f"sku-{i}", "quantity": i + 1} for i in range(5)]
            create = compare(db, settings, args.orders, items)
            db.close()
    targets: dict[str, Any] = {
        "followP50Ms": {"value": follow["p50"], "target": "<= 100"},
        "followP99Ms": {"value": follow["p99"], "target": "<= 500"},
        "createNewOrderOverRawBatch": {"value": create["ratio"], "target": "<= 1.10"},
    }
    if len(memory) > 1:
        growth = memory[-1]["maxRssKb"] / memory[0]["maxRssKb"]
        targets["peakMemoryGrowth"] = {
            "value": round(growth, 3),
            "target": f"flat from {memory[0]['backlog']:,} to {memory[-1]['backlog']:,}",
        }
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "durationSeconds": round(time.time() - started),
        "follow": follow,
        "memory": memory,
        "createOrder": create,
        "targets": targets,
    }
    print(json.dumps(targets, indent=2))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out} in {result['durationSeconds']} s")


if __name__ == "__main__":
    main()
