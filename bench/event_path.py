"""One event's path through the relay, from claim to settle, as folders and files crossed.

    python bench/event_path.py                      # this tree, partition and event leases
    python bench/event_path.py --against main       # ... and main's tree, side by side
    python bench/event_path.py --leases event --show

Starts a Firestore emulator (`firestore_outbox.testing.emulator`) and a local HTTP downstream
(`downstream.py`), then for each tree and lease mode runs a child process that imports that
tree's relay (`tree.py`, the tree first on `PYTHONPATH`), writes ONE event with the tree's
unit of work, runs one untraced warm-up event (so that lazy imports and first connections are
not counted), then writes one more and records the traced `Relay.run()` that delivers it.

What is recorded: every Python function call (`sys.setprofile` and `threading.setprofile`,
so the page readers, the publishing pool and the settler are seen too) whose code lives in a
`firestore_outbox` module, in the order the calls start (all threads, one sequence), from the
call of `Relay.run()` to its return. Module bodies (`<module>`) are not calls of the path.

What is counted on that sequence, and the rules that make two trees comparable, is
`path_counts.py`.

Thread interleaving makes the call counts vary a little between runs: `--repeats` runs each
and prints the median, with the range.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from path_counts import METRICS, Edge, count

HERE = Path(__file__).resolve().parent
PROJECT = "event-path"
LEASES = ("partition", "event")


# -- the child: one tree, one lease mode ----------------------------------------------------


def trace_one(emulator: str, url: str, leases: str) -> dict[str, Any]:
    """Runs in a child whose `PYTHONPATH` starts with the tree to measure."""
    import tree  # bench/tree.py: this process's tree's classes
    import workloads

    found = tree.load()
    top = importlib.import_module(found.Relay.__module__.split(".")[0])
    package = Path(str(top.__file__)).resolve().parent
    config = tree.relay_config(found, url, time_budget_seconds=30.0)
    config = dataclasses.replace(
        config, partitions=dataclasses.replace(config.partitions, leases=leases)
    )
    calls: list[tuple[str, str]] = []
    edges: list[Edge] = []
    for traced in (False, True):
        settings = found.Settings(
            project_id=f"{PROJECT}-{uuid.uuid4().hex[:8]}", emulator_host=emulator
        )
        workloads.seed(settings, 1)
        db = found.get_db_client(settings)
        with found.Relay(db, settings, config) as relay:
            if traced:
                calls, edges = record(lambda: relay.run(), package)
            else:
                relay.run()
        db.close()
    return {"where": str(package), **count(calls, edges, leases)}


def record(run: Any, package: Path) -> tuple[list[tuple[str, str]], list[Edge]]:
    """The (folder, module) of every `firestore_outbox` call `run()` makes, in order, and
    ((caller module, function), (called module, function)) for each."""
    calls: list[tuple[str, str]] = []
    edges: list[Edge] = []
    folders: dict[str, str | None] = {}

    def profile(frame: FrameType, event: str, _: object) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        filename = frame.f_code.co_filename
        folder = folders.get(filename, "")
        if folder == "":
            path = Path(filename).resolve()
            folder = folders[filename] = (
                str(path.parent.relative_to(package)) if path.is_relative_to(package) else None
            )
        if folder is not None:
            module = frame.f_globals.get("__name__", filename)
            calls.append((folder, module))
            back = frame.f_back
            caller = (back.f_globals.get("__name__", ""), back.f_code.co_name) if back else ("", "")
            edges.append((caller, (module, frame.f_code.co_name)))

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        summary = run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    if summary["processed"] != 1:
        raise SystemExit(f"the traced run delivered {summary['processed']} events: {summary}")
    return calls, edges


# -- the parent: emulator, downstream, a child per tree and mode -----------------------------


@contextmanager
def services() -> Iterator[tuple[str, str]]:
    from runs import downstream

    from firestore_outbox.testing.emulator import FirestoreEmulator

    with FirestoreEmulator() as emulator, downstream(0.0) as down:
        yield emulator.host_port, down["url"]


def child(pythonpath: Path | None, emulator: str, url: str, leases: str) -> dict[str, Any]:
    from runs import tree_env

    done = subprocess.run(
        [sys.executable, __file__, "--child", emulator, url, leases],
        env=tree_env(pythonpath),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode:
        raise SystemExit(f"traced run failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {"where": runs[0]["where"], "runs": runs}
    for metric in METRICS:
        values = [run[metric] for run in runs]
        merged[metric] = statistics.median(values)
        merged[f"{metric}Range"] = (min(values), max(values))
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--leases", choices=LEASES, action="append")
    parser.add_argument("--against", help="a git ref whose tree runs side by side (say main)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--show", action="store_true", help="print the folder sequences")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--child", nargs=3, metavar=("EMULATOR", "URL", "LEASES"))
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(HERE))
        print(json.dumps(trace_one(*args.child)))
        return
    sys.path.insert(0, str(HERE))
    from variants import export_tree

    results: dict[str, dict[str, Any]] = {}
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="event-path-")))
        trees: dict[str, Path | None] = {"this tree": None}
        if args.against:
            trees = {args.against: export_tree(args.against, scratch), **trees}
        emulator, url = stack.enter_context(services())
        for leases in args.leases or LEASES:
            for name, path in trees.items():
                runs = [child(path, emulator, url, leases) for _ in range(args.repeats)]
                results[f"{name} / {leases}"] = median_of(runs)
    print(f"{'tree / leases':28s} " + " ".join(f"{m:>15s}" for m in METRICS))
    for label, figures in results.items():
        cells = []
        for metric in METRICS:
            low, high = figures[f"{metric}Range"]
            cells.append(f"{figures[metric]:g}" + (f" ({low}-{high})" if low != high else ""))
        print(f"{label:28s} " + " ".join(f"{c:>15s}" for c in cells))
    if args.show:
        for label, figures in results.items():
            first = figures["runs"][0]
            print(f"\n{label}: folders {' > '.join(first['folderSequence'])}")
            print(f"{label}: reading order {', '.join(first['readingOrder'])}")
            print(f"{label}: steps back {'; '.join(first['stepsBackSeen'])}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
