"""The relay benchmark: our relay, the reference design's loop and the floor, side by side.

    python bench/bench_relay.py                      # the full run behind the README's table
    python bench/bench_relay.py --events 200 --concurrency 1,8 --repeats 1   # a quick look

Every run gets a Firestore emulator of its own, warmed by a short drain first (an emulator
slows as it ages, which would favour whichever system ran first), and a downstream process
answering after the given latency. Every run starts from a fresh backlog of `--events` due
events, and counts the Firestore documents read and written on the wire (`app.metering`). Prints a
table, writes `--out`.json and, when matplotlib is installed (`pip install -e '.[bench]'`),
`--out`.png. Emulator figures: loopback round trips and a local JVM, not production latency.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from bench_create_order import compare
from google.cloud.firestore import FieldFilter
from workloads import run_floor, run_reference, seed

from app.config import Settings
from app.emulator import FirestoreEmulator, reset_emulator
from app.firestore_client import get_db_client
from app.metering import meter
from app.relay import Relay, RelayConfig
from app.relay.follow import Follower
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork

HERE = Path(__file__).resolve().parent
PROJECT = "bench-outbox"
COLLECTION = "outbox"


@contextmanager
def downstream(latency_ms: float) -> Iterator[dict[str, Any]]:
    """A downstream process; the yielded dict gets `url`, then its tally when it stops."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / "downstream.py"), f"--latency-ms={latency_ms}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    state: dict[str, Any] = {"url": process.stdout.readline().strip()}
    try:
        yield state
    finally:
        process.stdin.close()
        state.update(json.loads(process.stdout.readline() or "{}"))
        process.wait(timeout=30)


@contextmanager
def emulated() -> Iterator[Settings]:
    with FirestoreEmulator() as emulator:
        yield Settings(project_id=PROJECT, emulator_host=emulator.host_port)


def relay_config(url: str, concurrency: int, batch_size: int) -> RelayConfig:
    return RelayConfig(
        downstream_url=url,
        concurrency=concurrency,
        batch_size=batch_size,
        time_budget_seconds=3600.0,
    )


def drain_with_relay(db: Any, settings: Settings, config: RelayConfig) -> int:
    relay = Relay(db, settings, config)
    processed = 0
    while True:
        summary = relay.run()
        processed += summary["processed"]
        if summary["status"] != "ok":
            raise SystemExit(f"relay failed: {summary}")
        if summary["stoppedBy"] == "drained":
            return processed


def measure(
    system: str,
    latency_ms: float,
    concurrency: int,
    args: argparse.Namespace,
    settings: Settings,
    *,
    warm_up: bool = False,
) -> dict[str, Any]:
    reset_emulator(str(settings.emulator_host), PROJECT)
    seeder = get_db_client(settings)
    seed(seeder, COLLECTION, args.events)
    seeder.close()
    db = get_db_client(settings)
    counts = meter(db)
    with downstream(latency_ms) as down:
        config = relay_config(down["url"], concurrency, args.batch_size)
        started = time.perf_counter()
        if system == "ours":
            settled = drain_with_relay(db, settings, config)
        elif system == "reference":
            settled = run_reference(db, COLLECTION, down["url"])
        else:
            settled = run_floor(db, COLLECTION, config)
        seconds = time.perf_counter() - started
    db.close()
    ops = counts.snapshot()
    delivered = down.get("deliveries", 0)
    if settled != args.events or (system != "floor" and down.get("distinct") != args.events):
        raise SystemExit(f"{system}: settled {settled}, downstream saw {down} of {args.events}")
    row = {
        "system": system,
        "latencyMs": latency_ms,
        "concurrency": concurrency,
        "events": args.events,
        "seconds": round(seconds, 3),
        "eventsPerSecond": round(args.events / seconds, 1),
        "deliveries": delivered,
        "readsPerEvent": round(ops.get("reads", 0) / args.events, 4),
        "billedReadsPerEvent": round(counts.billed_reads / args.events, 4),
        "writesPerEvent": round(ops.get("writes", 0) / args.events, 4),
        "rpcsPerEvent": round(
            sum(v for k, v in ops.items() if k.startswith("rpc:")) / args.events, 4
        ),
        "rpcs": {k[4:]: v for k, v in ops.items() if k.startswith("rpc:")},
    }
    label = "warm-up" if warm_up else system
    print(
        f"  {label:9s} {latency_ms:4g} ms  c={concurrency:<3d} {row['eventsPerSecond']:8.1f} ev/s"
        f"  reads/ev {row['readsPerEvent']:.3f}  writes/ev {row['writesPerEvent']:.3f}",
        flush=True,
    )
    return row


def median_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (system, latency, concurrency): the median throughput of its repeats."""
    groups: dict[tuple[str, float, int], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["system"], row["latencyMs"], row["concurrency"]), []).append(row)
    merged = []
    for group in groups.values():
        throughput = [r["eventsPerSecond"] for r in group]
        middle = sorted(group, key=lambda r: r["eventsPerSecond"])[len(group) // 2]
        merged.append(
            {**middle, "eventsPerSecond": statistics.median(throughput), "repeats": throughput}
        )
    return merged


def sweep(args: argparse.Namespace, shared: Settings | None) -> list[dict[str, Any]]:
    """Every run on an emulator of its own (unless `shared`), warmed first: the emulator
    slows as it ages, which would favour whichever system runs first."""
    warm = argparse.Namespace(**{**vars(args), "events": min(args.events, 500)})

    def run(system: str, latency: float, concurrency: int) -> dict[str, Any]:
        with nullcontext(shared) if shared else emulated() as settings:
            measure("ours", 0, 8, warm, settings, warm_up=True)  # the emulator's JIT
            return measure(system, latency, concurrency, args, settings)

    rows = []
    for repeat in range(args.repeats):
        print(f"repeat {repeat + 1} of {args.repeats}", flush=True)
        rows.append(run("floor", 0, 1))
        for latency in args.latencies:
            rows.append(run("reference", latency, 1))
            for concurrency in args.concurrency:
                rows.append(run("ours", latency, concurrency))
    return median_rows(rows)


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
        seeder = get_db_client(settings)
        seed(seeder, COLLECTION, backlog)
        seeder.close()
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


def targets(rows: list[dict[str, Any]], extras: dict[str, Any]) -> dict[str, Any]:
    def best(system: str, latency: float) -> float:
        return max(
            (
                r["eventsPerSecond"]
                for r in rows
                if (r["system"], r["latencyMs"]) == (system, latency)
            ),
            default=0.0,
        )

    floor = best("floor", 0)
    checks: dict[str, Any] = {}
    if 10 in {r["latencyMs"] for r in rows}:
        ratio = best("ours", 10) / max(best("reference", 10), 1e-9)
        checks["speedupOverReferenceAt10ms"] = {"value": round(ratio, 1), "target": ">= 20"}
    if floor:
        checks["fractionOfFloorAt0ms"] = {
            "value": round(best("ours", 0) / floor, 2),
            "target": ">= 0.7",
        }
    ours = [r for r in rows if r["system"] == "ours"]
    if ours:
        checks["documentReadsPerEvent"] = {
            "value": max(r["readsPerEvent"] for r in ours),
            "target": "<= 1",
        }
        checks["billedReadsPerEvent"] = {
            "value": max(r["billedReadsPerEvent"] for r in ours),
            "target": "<= 1 plus each run's fixed reads (2 empty queries, 2 COUNTs: a read each)",
        }
        checks["writesPerEvent"] = {
            "value": max(r["writesPerEvent"] for r in ours),
            "target": "<= 2",
        }
    checks.update(extras)
    return checks


def print_table(rows: list[dict[str, Any]]) -> None:
    print()
    print(
        "| system | downstream latency | concurrency | events/s "
        "| reads/event (billed) | writes/event | RPCs/event |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in sorted(
        rows,
        key=lambda r: (
            r["latencyMs"],
            r["system"] != "reference",
            r["system"] != "floor",
            r["concurrency"],
        ),
    ):
        conc = "-" if r["system"] != "ours" else r["concurrency"]
        print(
            f"| {r['system']} | {r['latencyMs']:g} ms | {conc} | {r['eventsPerSecond']:,.0f} | "
            f"{r['readsPerEvent']:.3f} ({r['billedReadsPerEvent']:.3f}) | "
            f"{r['writesPerEvent']:.3f} | "
            f"{r['rpcsPerEvent']:.3f} |"
        )


def numbers(text: str, kind: Callable[[str], Any] = int) -> list[Any]:
    return [kind(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--latencies", type=lambda t: numbers(t, float), default=[0.0, 10.0])
    parser.add_argument("--concurrency", type=numbers, default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--batch-size", type=int, default=RelayConfig.batch_size)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--follow-rate", type=float, default=100.0, help="events/s")
    parser.add_argument("--follow-seconds", type=float, default=20.0)
    parser.add_argument("--memory-backlogs", type=numbers, default=[5000, 50000])
    parser.add_argument("--memory-seconds", type=float, default=10.0)
    parser.add_argument("--orders", type=int, default=500, help="create_new_order samples")
    parser.add_argument("--out", default=str(HERE / "results" / "relay"))
    parser.add_argument(
        "--smoke", action="store_true", help="a few seconds of everything, figures not kept"
    )
    args = parser.parse_args()
    if args.smoke:
        args.events, args.latencies, args.concurrency, args.repeats = 60, [0.0], [4], 1
        args.follow_rate, args.follow_seconds, args.orders = 20.0, 1.0, 10
        args.memory_backlogs, args.memory_seconds = [50, 100], 0.5
        args.out = str(Path(tempfile.mkdtemp(prefix="bench-relay-")) / "relay")

    started = time.time()
    load_before = os.getloadavg()
    # Each part gets an emulator of its own: after the sweep's few hundred thousand writes
    # the emulator's listeners slowed to a stop (Deadline Exceeded) in one run. The smoke
    # run's few writes share one, which saves it three emulator start-ups.
    with ExitStack() as stack:
        shared = stack.enter_context(emulated()) if args.smoke else None

        def part() -> Any:
            return nullcontext(shared) if shared else emulated()

        rows = sweep(args, shared)
        with part() as settings:
            follow = follow_latency(args, settings)
        with part() as settings:
            memory = peak_memory(args, settings)
        with part() as settings:
            db = get_db_client(settings)
            items = [{"productId": f"sku-{i}", "quantity": i + 1} for i in range(5)]
            create = compare(db, settings, args.orders, items)
            db.close()
    extras: dict[str, Any] = {
        "followP50Ms": {"value": follow["p50"], "target": "<= 100"},
        "followP99Ms": {"value": follow["p99"], "target": "<= 500"},
        "createNewOrderOverRawBatch": {"value": create["ratio"], "target": "<= 1.10"},
    }
    if len(memory) > 1:
        growth = memory[-1]["maxRssKb"] / memory[0]["maxRssKb"]
        extras["peakMemoryGrowth"] = {
            "value": round(growth, 3),
            "target": f"flat from {memory[0]['backlog']:,} to {memory[-1]['backlog']:,}",
        }
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadAverageBefore": [round(x, 2) for x in load_before],
            "loadAverageAfter": [round(x, 2) for x in os.getloadavg()],
        },
        "durationSeconds": round(time.time() - started),
        "runs": rows,
        "follow": follow,
        "memory": memory,
        "createOrder": create,
        "targets": targets(rows, extras),
    }
    print_table(rows)
    print(json.dumps(result["targets"], indent=2))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    try:
        from plot import draw
    except ImportError as exc:
        print(f"no plot: {exc} (pip install -e '.[bench]')")
    else:
        draw(result, out.with_suffix(".png"))
    print(f"wrote {out.with_suffix('.json')} in {result['durationSeconds']} s")


if __name__ == "__main__":
    main()
