"""What OpenTelemetry costs the relay, counted in instructions (valgrind's callgrind): the same
count however busy the machine is, so two settings compare without the noise that CPU time
has on a shared machine.

    python bench/tracing_instructions.py            # bench/results/tracing-instructions.json
    python bench/tracing_instructions.py --smoke    # a tiny run, nothing kept

- relay: a whole relay process (`relay_worker.py`, every thread, the garbage collector, the
  client libraries' C code) draining a backlog into a downstream on the emulator, with the
  OpenTelemetry API alone (`off`) and with the SDK's tracer provider and no exporter
  (`traces`); each count is taken at two backlog sizes and their difference divided by the
  events between them, so start-up cancels out. Tracing's cost is `traces` over `off`.
- pieces: each per-attempt call of `tracing_breakdown.py`, alone, the same way (two call
  counts, the difference over the calls between them).

Instructions are not CPU time: code that misses the CPU's caches more (as a span's many small
objects do) takes more time per instruction. The count says what work is added, exactly;
`bench_tracing.py` says what the CPU pays for it, with noise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench_tracing import in_fresh_process, report
from runs import downstream
from tracing_breakdown import PIECES
from workloads import seed

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator

HERE = Path(__file__).resolve().parent
CALLGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]


def _counted(stderr: str) -> int:
    found = re.search(r"Collected : (\d+)", stderr)
    if found is None:
        raise SystemExit(f"callgrind reported no count:\n{stderr[-2000:]}")
    return int(found.group(1))


def relay_run(host: str, setting: str, events: int) -> int:
    """The instructions of one relay process that drains `events` events, start-up included."""
    project = f"bench-instructions-{setting}-{events}"
    reset_emulator(host, project)
    with ExitStack() as stack:
        tally = stack.enter_context(downstream(0.0))
        seed(Settings(project_id=project, emulator_host=host), events)  # not counted
        spec = {"runner": "relay", "emulator": host, "project": project, "url": tally["url"]}
        spec.update(telemetry=setting != "off" and setting, config={}, seed=0, seedEmulator=host)
        spec.update(firestoreTimeoutSeconds=600)  # every call is some 30 times slower
        worker = subprocess.Popen(
            [*CALLGRIND, sys.executable, str(HERE / "relay_worker.py"), json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stack.callback(worker.kill)
        assert worker.stdin is not None and worker.stdout is not None
        if not json.loads(worker.stdout.readline() or "{}").get("ready"):
            raise SystemExit(f"a relay worker did not start: {worker.communicate()[1][-2000:]}")
        worker.stdin.write("go\n")
        worker.stdin.flush()
        drained = json.loads(worker.stdout.readline() or "{}")
        _, stderr = worker.communicate(timeout=900)
    if drained.get("summary", {}).get("processed") != events:
        raise SystemExit(
            f"the relay delivered {drained.get('summary')} of {events} events:\n" + stderr[-3000:]
        )
    return _counted(stderr)


def relay_count(host: str, setting: str, events: int, retried: list[str]) -> int:
    """`relay_run`, once more after a failure: slowed some 30 times, a relay's long stream
    now and then outlives the emulator's deadline (`504 Stream removed`)."""
    try:
        return relay_run(host, setting, events)
    except SystemExit as failure:
        retried.append(f"{setting} {events}: {str(failure).splitlines()[0]}")
        return relay_run(host, setting, events)


def relay(small: int, large: int) -> dict[str, Any]:
    """Instructions per delivered event of each setting, and tracing's share over `off`."""
    per_event: dict[str, float] = {}
    retried: list[str] = []
    with FirestoreEmulator() as emulator:
        relay_count(emulator.host_port, "off", small, retried)  # warm the emulator (its JIT)
        for setting in ("off", "traces"):
            counts = [relay_count(emulator.host_port, setting, n, retried) for n in (small, large)]
            per_event[setting] = (counts[1] - counts[0]) / (large - small)
    return {
        "events": [small, large],
        "retried": retried,
        "perEvent": {name: round(count) for name, count in per_event.items()},
        "tracesShare": round(per_event["traces"] / per_event["off"] - 1, 4),
    }


def piece(setting: str, name: str, calls: int) -> int:
    """Instructions of one call of the piece `name` (`tracing_breakdown.PIECES`)."""
    counts = []
    for n in (calls // 5, calls + calls // 5):
        done = subprocess.run(
            [*CALLGRIND, sys.executable, "-c", PIECES, setting, str(n), name],
            cwd=HERE.parent,
            capture_output=True,
            text=True,
            check=True,
            timeout=900,
        )
        counts.append(_counted(done.stderr))
    return round((counts[1] - counts[0]) / calls)


def pieces(calls: int) -> dict[str, dict[str, int]]:
    """Every piece's instructions per call, with the API alone and with the SDK's tracer."""
    names = {
        setting: list(in_fresh_process(PIECES, setting, "10")) for setting in ("off", "traces")
    }
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        futures = {
            (setting, name): pool.submit(piece, setting, name, calls)
            for setting, found in names.items()
            for name in found
        }
        return {s: {n: futures[s, n].result() for n in found} for s, found in names.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--events", type=int, nargs=2, default=[100, 600], metavar=("SMALL", "LARGE")
    )
    parser.add_argument("--calls", type=int, default=1000, help="calls of each piece")
    parser.add_argument("--smoke", action="store_true", help="a tiny run, nothing kept")
    args = parser.parse_args()
    if args.smoke:
        args.events, args.calls = [20, 40], 50
    started, load_before = time.time(), os.getloadavg()
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "relayInstructions": relay(*args.events),
        "pieceInstructions": pieces(args.calls),
    }
    report(result, started, load_before, "tracing-instructions.json", keep=not args.smoke)


if __name__ == "__main__":
    main()
