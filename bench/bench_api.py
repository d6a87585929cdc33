"""The front door under load: the drill (40 clients, each key reused for 3 requests with
alternating bodies, every 201 replayed) against `outbox api`, and the same load without keys
against the bare order API, side by side in one run, on the local Firestore emulator.

    python bench/bench_api.py [--clients 40] [--iterations 30] [--rounds 2]

Uses FIRESTORE_EMULATOR_HOST if set, else starts an emulator. Both servers are waitress
processes with the same thread count; rounds alternate bare and guarded so drift in the
machine's load hits both. Writes bench/results/api.json. Emulator figures show the
middleware's cost relative to the endpoint's, not production Firestore latency.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firestore_outbox.config.shortcuts import load_settings  # noqa: E402
from firestore_outbox.firestore.settings import Settings  # noqa: E402
from firestore_outbox.testing.emulator import FirestoreEmulator  # noqa: E402
from tests.support.api_drill import DrillRun, percentile, run_bare, run_drill  # noqa: E402

THREADS = 40  # one per client: latency is the server's work, not its queue


def serve_bare() -> None:
    """Child mode: the order API without the middleware, under waitress."""
    from app.api import make_orders_app
    from firestore_outbox.firestore.client import get_db_client
    from firestore_outbox.idempotency.server import create_server

    settings = load_settings()
    server = create_server(
        make_orders_app(get_db_client(settings), settings), "127.0.0.1", 0, THREADS
    )
    print(f"listening on http://127.0.0.1:{server.effective_port}", flush=True)
    server.run()


def start(command: list[str], env: dict[str, str], stack: ExitStack) -> str:
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    stack.callback(process.wait, 10)
    stack.callback(process.terminate)
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("listening on "), line
    return line.split("listening on ", 1)[1].strip()


def summary(run: DrillRun) -> dict[str, Any]:
    kinds = {
        kind: {
            "n": len(samples),
            "p50_ms": round(percentile(samples, 0.5), 2),
            "p99_ms": round(percentile(samples, 0.99), 2),
        }
        for kind, samples in sorted(run.latencies.items())
    }
    every = [s for samples in run.latencies.values() for s in samples]
    return {
        "requests": run.requests,
        "requests_per_s": round(run.requests / run.elapsed, 1),
        "p50_ms": round(percentile(every, 0.5), 2),
        "p99_ms": round(percentile(every, 0.99), 2),
        "statuses": dict(sorted(run.statuses.items())),
        "kinds": kinds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve-bare", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare()
        return
    settings = load_settings()
    with ExitStack() as stack:
        if not settings.emulator_host:
            emulator = stack.enter_context(FirestoreEmulator())
            settings = Settings(emulator_host=emulator.host_port)
        env = {
            **os.environ,
            "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
            "FIRESTORE_PROJECT_ID": settings.project_id or "bench-api",
            "LOG_LEVEL": "WARNING",
        }
        outbox = str(Path(sys.executable).with_name("outbox"))
        guarded_url = start([outbox, "api", "--port", "0", "--threads", str(THREADS)], env, stack)
        bare_url = start([sys.executable, __file__, "--serve-bare"], env, stack)
        run_bare(bare_url, clients=4, iterations=5)  # warm up both servers and the emulator
        run_drill(guarded_url, "warm-" + uuid.uuid4().hex[:6], clients=4, iterations=3)
        rounds = []
        # One client alone shows each request's own cost; 40 at once, the drill's load.
        phases = [(1, args.iterations * 2)] * args.rounds + [
            (args.clients, args.iterations)
        ] * args.rounds
        for number, (clients, iterations) in enumerate(phases):
            bare = run_bare(bare_url, clients=clients, iterations=iterations)
            guarded = run_drill(
                guarded_url, uuid.uuid4().hex[:8], clients=clients, iterations=iterations
            )
            assert set(guarded.statuses) <= {201, 409, 422}, guarded.statuses
            assert guarded.replays_differing == 0
            assert all(len(bodies) == 1 for bodies in guarded.created.values())
            rounds.append(
                {
                    "round": number + 1,
                    "clients": clients,
                    "iterations": iterations,
                    "bare": summary(bare),
                    "guarded": summary(guarded),
                }
            )
    for entry in rounds:
        bare, guarded = entry["bare"], entry["guarded"]
        first = guarded["kinds"]["first"]["p50_ms"]
        replay = guarded["kinds"]["replay"]["p50_ms"]
        entry["first_over_bare_p50"] = round(first / bare["p50_ms"], 2)
        entry["replay_over_first_p50"] = round(replay / first, 2)
        print(
            f"round {entry['round']} ({entry['clients']} clients): "
            f"bare {bare['requests_per_s']} req/s p50 {bare['p50_ms']} "
            f"p99 {bare['p99_ms']} ms | drill {guarded['requests_per_s']} req/s "
            f"p50 {guarded['p50_ms']} p99 {guarded['p99_ms']} ms, statuses {guarded['statuses']}"
        )
        for kind, figures in guarded["kinds"].items():
            n, p50, p99 = figures["n"], figures["p50_ms"], figures["p99_ms"]
            print(f"    {kind:7s} n={n:5d} p50 {p50:8.2f} ms p99 {p99:8.2f} ms")
        print(
            f"    first-request p50 / bare p50 = {entry['first_over_bare_p50']}; "
            f"replay p50 / first p50 = {entry['replay_over_first_p50']}"
        )
    load = os.getloadavg()
    result = {
        "clients": args.clients,
        "iterations": args.iterations,
        "threads": THREADS,
        "loadavg_after": [round(x, 2) for x in load],
        "rounds": rounds,
    }
    out = ROOT / "bench" / "results" / "api.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
