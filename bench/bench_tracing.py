"""What OpenTelemetry costs the relay: CPU per delivered event with tracing off against tracing
on with nothing exported, side by side in one run.

    python bench/bench_tracing.py                 # docs/performance.md: 10 rounds of 2,000
    python bench/bench_tracing.py --rounds 3 --events 1000
    python bench/bench_tracing.py --traced-events # each event with a creation context
    python bench/bench_tracing.py --smoke         # CI: one tiny round, nothing kept

A round starts three relay processes at the same moment, each draining a backlog of its own
into a downstream of its own on one emulator (`bench_relay.py`'s `downstream-0ms` run): `off`,
the OpenTelemetry API alone (nothing configured, the default); `traces`, the SDK's tracer
provider with no exporter (every span recorded and dropped); `all`, that and the SDK's meter
provider (metrics aggregated in memory). The order they are started in turns round by round.
Two measures, both CPU time, both taken within each round, their median and spread kept:

- whole process: each relay process's CPU time over its drain per delivered event; an SDK
  setting's cost is its figure over `off`'s of the same round. Honest but noisy: two
  processes on a shared machine differ by more than tracing costs.
- in the relay: `telemetry_account.py` sums the thread CPU time of the per-attempt telemetry
  calls inside each relay; an SDK setting's share is that sum's excess over `off`'s, per
  event, as a share of `off`'s whole-process CPU per event of the same round. Both figures
  come from the same runs, so the noise between processes cannot swamp it.

`tracing_breakdown.py` times each of those calls alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from runs import SCENARIOS, downstream, measures, start_workers
from workloads import seed

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = SCENARIOS["downstream-0ms"]
# The relay's settings, run together: the API alone (nothing configured: the default), the
# SDK's tracer provider with no exporter, and both SDK providers (spans and metrics).
OFF, TRACES, ALL = "off", "traces", "all"
SETTINGS = {OFF: False, TRACES: "traces", ALL: "all"}


def in_fresh_process(code: str, *args: str) -> Any:
    """What `code` prints as JSON, run with `args` in a fresh process (OpenTelemetry's
    providers are set once per process)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(done.stdout)


def together(
    host: str, events: int, order: list[str], traced: bool = False
) -> dict[str, tuple[float, float, dict[str, float]]]:
    """One round: a relay of each setting started at the same moment (in `order`), each
    draining a backlog of its own (a project of its own on one emulator) into a downstream of
    its own; CPU ms per delivered event of each, and the CPU microseconds per event its
    per-attempt telemetry took inside it (`telemetry_account.py`). Side by side in time, a
    machine that gets busier slows all three. `traced`: every event is written inside a span,
    so that each carries a creation context for the relay to parse and continue."""
    with ExitStack() as stack:
        workers: dict[str, Any] = {}
        tallies: dict[str, dict[str, Any]] = {}
        for name, telemetry in SETTINGS.items():
            project = f"bench-tracing-{name}"
            reset_emulator(host, project)
            tallies[name] = stack.enter_context(downstream(0.0))
            spec: dict[str, Any] = {"runner": "relay", "emulator": host, "project": project}
            spec.update(telemetry=telemetry, url=tallies[name]["url"], config={}, account=True)
            if traced:  # here, in a span; the worker seeds on a client of its own otherwise
                with trace.get_tracer("bench").start_as_current_span("seed"):
                    seed(Settings(project_id=project, emulator_host=host), events)
            spec.update(seed=0 if traced else events, seedEmulator=host)
            (workers[name],) = start_workers(stack, 1, spec, None)
        for name in order:
            workers[name].stdin.write("go\n")
            workers[name].stdin.flush()
        reports = {name: json.loads(w.stdout.readline()) for name, w in workers.items()}
        for worker in workers.values():
            worker.wait(timeout=600)
    # The downstreams' tallies are complete once their context has closed.
    return {
        name: (
            measures([reports[name]], tallies[name], events, name, SCENARIO)["cpuMsPerEvent"],
            reports[name]["telemetrySeconds"] / events * 1e6,
            {call: s / events * 1e6 for call, s in reports[name]["telemetryByCall"].items()},
        )
        for name in SETTINGS
    }


def end_to_end(rounds: int, events: int, traced: bool = False) -> dict[str, Any]:
    """`rounds` rounds of drains run together; CPU ms per delivered event of each setting,
    and each SDK setting's cost over the API alone within each round."""
    if traced:
        trace.set_tracer_provider(TracerProvider())
    cpu: dict[str, list[float]] = {name: [] for name in SETTINGS}
    telemetry: dict[str, list[float]] = {name: [] for name in SETTINGS}
    by_call: dict[str, dict[str, list[float]]] = {name: {} for name in SETTINGS}
    with FirestoreEmulator() as emulator:
        names = list(SETTINGS)
        together(emulator.host_port, min(events, 300), names)  # warm the emulator (its JIT)
        for n in range(rounds):
            one = together(emulator.host_port, events, names[n % 3 :] + names[: n % 3], traced)
            for name in SETTINGS:
                cpu[name].append(one[name][0])
                telemetry[name].append(one[name][1])
                for call, us in one[name][2].items():
                    by_call[name].setdefault(call, []).append(us)
            shown = ", ".join(
                f"{name} {one[name][0]:.3f} ms (telemetry {one[name][1]:.1f} us)"
                for name in SETTINGS
            )
            print(f"  round {n + 1}: {shown}", flush=True)
    result: dict[str, Any] = {"events": events, "rounds": rounds, "tracedEvents": traced}
    result["cpuMsPerEvent"] = {name: _spread(cpu[name], 3) for name in SETTINGS}
    result["telemetryUsPerEvent"] = {name: _spread(telemetry[name], 1) for name in SETTINGS}
    # The same, call by call (a call some round did not make counts 0 there).
    result["telemetryUsPerEventByCall"] = {
        name: {call: _spread(us + [0.0] * (rounds - len(us)), 1) for call, us in calls.items()}
        for name, calls in by_call.items()
    }
    for name in (TRACES, ALL):
        # Whole process: the SDK setting's CPU per event over the API alone's, round by round.
        costs = [on / off - 1 for off, on in zip(cpu[OFF], cpu[name], strict=True)]
        result[f"{name}Cost"] = _spread(costs, 4)
        # In the process: what the telemetry itself took more than with the API alone, as a
        # share of the API-alone relay's CPU per event of the same round.
        shares = [
            (tel - tel_off) / (off * 1000)
            for tel, tel_off, off in zip(telemetry[name], telemetry[OFF], cpu[OFF], strict=True)
        ]
        result[f"{name}TelemetryShare"] = _spread(shares, 4)
    return result


def _spread(values: list[float], digits: int) -> dict[str, Any]:
    ordered = sorted(values)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else ordered * 3
    return {
        "median": round(statistics.median(ordered), digits),
        "min": round(ordered[0], digits),
        "max": round(ordered[-1], digits),
        "interquartile": [round(quartiles[0], digits), round(quartiles[2], digits)],
        "runs": [round(v, digits) for v in values],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10, help="rounds of drains run together")
    parser.add_argument("--events", type=int, default=2000, help="backlog of one drain")
    parser.add_argument(
        "--traced-events",
        action="store_true",
        help="events written inside a span, each with a creation context "
        "(bench/results/tracing-traced.json)",
    )
    parser.add_argument("--smoke", action="store_true", help="one tiny pair, nothing kept")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.events = 1, 60
    started, load_before = time.time(), os.getloadavg()
    result: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "endToEnd": end_to_end(args.rounds, args.events, args.traced_events),
    }
    ends = result["endToEnd"]
    # The target: tracing on with no exporter, under 5% of the relay's CPU per event.
    result["target"] = {
        "under": 0.05,
        "tracesTelemetryShare": ends[f"{TRACES}TelemetryShare"]["median"],
        "tracesCost": ends[f"{TRACES}Cost"]["median"],
    }
    name = "tracing-traced.json" if args.traced_events else "tracing.json"
    report(result, started, load_before, name, keep=not args.smoke)


def report(
    result: dict[str, Any], started: float, load_before: tuple[float, ...], name: str, keep: bool
) -> None:
    """Add the machine, its load before and after and the duration since `started` to
    `result`; print it, and with `keep` write it to bench/results/`name`."""
    result["machine"] = {
        "cpus": os.cpu_count(),
        "loadAverageBefore": [round(x, 2) for x in load_before],
        "loadAverageAfter": [round(x, 2) for x in os.getloadavg()],
    }
    result["durationSeconds"] = round(time.time() - started)
    print(json.dumps(result, indent=2))
    if keep:
        (ROOT / "bench" / "results" / name).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
