"""The relay benchmark: relays side by side, by name, in one run, over four scenarios.

    python bench/bench_relay.py                  # the full run behind docs/performance.md's table
    python bench/bench_relay.py --smoke          # CI: every scenario on a tiny backlog
    python bench/bench_relay.py --variants reference,today --scenarios downstream-10ms

Variants (`variants.py`): the reference design's loop and today's relay, and any relay
registered there (one line). Scenarios (`runs.py`): the downstream answering after 0 and
10 ms; every Firestore round trip 40 ms longer through a delaying TCP proxy (a cross-cloud
link); four relay processes on one backlog. Each run drains a fresh backlog and reports
events/s, documents read and written per delivered event (counted on the wire by
`firestore_outbox.testing.metering` in each relay process), relay CPU per event (the relay
processes' CPU time over the drain) and lost races per event. Runs are repeated in rotating order
and the median kept; ratios are taken between runs of the same repeat set, never against old
figures. Writes `--out`.json and, with matplotlib (`pip install -e '.[bench]'`), `--out`.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from runs import SCENARIOS, Scenario, run
from targets import ratios, targets
from variants import VARIANTS, export_tree, variant

from firestore_outbox.testing.emulator import FirestoreEmulator

HERE = Path(__file__).resolve().parent
WARM_UP_EVENTS = 500


def plan(args: argparse.Namespace) -> list[tuple[str, Scenario]]:
    """(variant, scenario) pairs; the reference loop only alone: it has no leases to race."""
    return [
        (name, SCENARIOS[scenario])
        for scenario in args.scenarios
        for name in args.variants
        if not (variant(name).runner == "reference" and SCENARIOS[scenario].relays > 1)
    ]


def sweep(args: argparse.Namespace, trees: dict[str, Path | None]) -> list[dict[str, Any]]:
    """Every pair `--repeats` times, in an order rotated each repeat (an emulator slows as it
    ages, which would favour whichever runs first). Without `--emulator`, every run gets a
    fresh emulator, warmed by a short drain first (its JIT)."""
    pairs = plan(args)
    rows = []
    for repeat in range(args.repeats):
        print(f"repeat {repeat + 1} of {args.repeats}", flush=True)
        shift = repeat % len(pairs)
        for name, scenario in pairs[shift:] + pairs[:shift]:
            chosen = variant(name)
            events = args.reference_events if chosen.runner == "reference" else args.events
            row = attempt(args, trees, name, scenario, events)
            rows.append(row)
            print(
                f"  {name:12s} {scenario.name:20s} {row['eventsPerSecond']:9.1f} ev/s"
                f"  reads/ev {row['readsPerEvent']:.3f}  writes/ev {row['writesPerEvent']:.3f}"
                f"  cpu/ev {row['cpuMsPerEvent']:.3f} ms  lost/ev {row['lostRacesPerEvent']:.3f}"
                + (f"  added RTT {row['addedRttMs']} ms" if "addedRttMs" in row else "")
                + ceiling_text(row),
                flush=True,
            )
    return median_rows(rows)


def ceiling_text(row: dict[str, Any]) -> str:
    """The machine's bounds in this run (`ceiling.py`), and the CPU per event behind them."""
    bound = row.get("ceiling")
    if not bound:
        return ""
    cpu = " ".join(f"{k} {v:.3f}" for k, v in bound["cpuMsPerEvent"].items())
    return (
        f"\n    ceiling {bound['withoutRelayCpu']} ev/s without relay CPU,"
        f" {bound['withRelayCpu']} with it (CPU ms/ev: {cpu})"
    )


def attempt(
    args: argparse.Namespace,
    trees: dict[str, Path | None],
    name: str,
    scenario: Scenario,
    events: int,
) -> dict[str, Any]:
    """One run, on a fresh emulator warmed first (unless `--emulator`). A run that fails (on
    a machine so busy the emulator misses the relay's Firestore deadline, say) is run once
    more on a fresh emulator rather than losing the sweep; the row then says `retried`."""
    chosen, failure = variant(name), None
    for _ in range(2):
        try:
            with nullcontext(args.emulator) if args.emulator else emulator() as host:
                if not args.emulator:
                    warm = SCENARIOS["downstream-0ms"]
                    run(name, chosen, warm, WARM_UP_EVENTS, host, trees[name], args.config)
                row = run(name, chosen, scenario, events, host, trees[name], args.config)
        except SystemExit as exc:
            if failure is not None:
                raise
            failure = str(exc)
            print(f"  {name} in {scenario.name} failed ({failure}): once more", flush=True)
            continue
        return {**row, "retried": failure} if failure else row
    raise AssertionError("unreachable")


@contextmanager
def emulator() -> Iterator[str]:
    """A fresh Firestore emulator's host:port."""
    with FirestoreEmulator() as fresh:
        yield fresh.host_port


def median_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, scenario): the repeat of median throughput, all repeats kept."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["variant"], row["scenario"]), []).append(row)
    merged = []
    for group in groups.values():
        ordered = sorted(group, key=lambda r: r["eventsPerSecond"])
        merged.append(
            {
                **ordered[len(ordered) // 2],
                "eventsPerSecond": statistics.median(r["eventsPerSecond"] for r in group),
                "repeats": [r["eventsPerSecond"] for r in group],
            }
        )
    return merged


def print_table(rows: list[dict[str, Any]]) -> None:
    print()
    print(
        "| scenario | variant | events/s | reads/event (billed) | writes/event "
        "| CPU ms/event | lost races/event |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['scenario']} | {r['variant']} | {r['eventsPerSecond']:,.1f} | "
            f"{r['readsPerEvent']:.3f} ({r['billedReadsPerEvent']:.3f}) | "
            f"{r['writesPerEvent']:.3f} | {r['cpuMsPerEvent']:.3f} | "
            f"{r['lostRacesPerEvent']:.3f} |"
        )


def names(known: dict[str, Any]) -> Any:
    def parse(text: str) -> list[str]:
        chosen = [part for part in text.split(",") if part]
        unknown = [part for part in chosen if part not in known]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(known)}; got {text!r}")
        return chosen

    return parse


def variant_names(text: str) -> list[str]:
    chosen = [part for part in text.split(",") if part]
    try:
        for name in chosen:
            variant(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not chosen:
        raise argparse.ArgumentTypeError("name at least one variant")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", type=variant_names, default=list(VARIANTS))
    parser.add_argument("--scenarios", type=names(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--events", type=int, default=5000, help="backlog of a relay run")
    parser.add_argument(
        "--reference-events", type=int, default=500, help="backlog of a reference-loop run"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--emulator", help="host:port of one emulator for every run")
    parser.add_argument("--out", default=str(HERE / "results" / "relay"))
    parser.add_argument(
        "--smoke", action="store_true", help="every scenario on a tiny backlog, not kept"
    )
    args = parser.parse_args()
    args.config = {}
    if args.smoke:
        args.events, args.reference_events, args.repeats = 60, 20, 1
        args.out = str(Path(tempfile.mkdtemp(prefix="bench-relay-")) / "relay")
    started, load_before = time.time(), os.getloadavg()
    with ExitStack() as stack:
        if args.smoke and not args.emulator:
            args.emulator = stack.enter_context(emulator())
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-trees-")))
        trees = {
            name: export_tree(ref, scratch) if (ref := variant(name).ref) else None
            for name in args.variants
        }
        rows = sweep(args, trees)
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadAverageBefore": [round(x, 2) for x in load_before],
            "loadAverageAfter": [round(x, 2) for x in os.getloadavg()],
        },
        "durationSeconds": round(time.time() - started),
        "variants": {name: variant(name).label for name in args.variants},
        "runs": rows,
        "ratios": ratios(rows),
        "targets": targets(rows),
    }
    print_table(rows)
    print(json.dumps({"ratios": result["ratios"], "targets": result["targets"]}, indent=2))
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
