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

What is counted, on that sequence of calls, each named by its file:

- files: distinct files entered; folders: distinct folders (the file's directory under
  `firestore_outbox/`, `relay/read`, `firestore`, `.` for the package root).
- calls, by folder: the folder of every call, consecutive repeats collapsed into one.
  folder moves: steps in that sequence (its length minus one). returns: steps into a
  folder the sequence has already left once (the call sequence comes back to it).
- returns, driver excluded: the same, not counting a step whose first call is into a module
  of the driver (the run loop: `relay.run.*` here, `relay.core` and the two drains before);
  a driver that calls each stage in turn comes back to itself by design.
- reading order: the files in the order they are first entered (what a reader meets
  following the event), and the moves and returns of their folders, counted the same way.
- steps back: calls from a module of one step of the event (run, claim, read, publish,
  settle, in the lease mode's order) into a module of an earlier step (run included): the
  code going back along the path, whatever the folders. A module's step is its folder under
  `relay/` (`relay/claim/...`); the older tree's code gets the step of where it moved to
  (`OLD_STEPS`, by module, and `OLD_FUNCTIONS` for the functions that moved apart from
  their module), so that both trees are counted by the same rules. Shared nouns (`relay/`'s
  root: the aggregates' order, the pipeline, healing, ...) and the layers below the relay
  are no step. A call within one module is no step either.

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

HERE = Path(__file__).resolve().parent
PROJECT = "event-path"
LEASES = ("partition", "event")
DRIVERS = ("relay.run.", "relay.core", "relay.partitioned.drain", "relay.per_event.drain")
METRICS = (
    "files",
    "folders",
    "moves",
    "returns",
    "returnsNoDriver",
    "readMoves",
    "readReturns",
    "stepsBack",
)
HEALING = ("needs_heal", "needs_partition", "_has_partition", "heal_fields", "heal_change")
# (module, function) of a call or its caller.
Edge = tuple[tuple[str, str], tuple[str, str]]
# The steps of one event, in path order for each lease mode (per-event leases read first).
ORDER = {
    "partition": ("run", "claim", "read", "publish", "settle"),
    "event": ("run", "read", "claim", "publish", "settle"),
}
# The step of each module of the tree before the relay's folders followed the event's path
# (the modules since moved into `relay/<step>/` name it by their folder).
OLD_STEPS: dict[str, str | None] = {
    "core": "run",
    "partitioned.drain": "run",
    "partitioned.mode_records": "run",
    "per_event.drain": "run",
    "partitioned.holdings": "claim",
    "partitioned.claims": "claim",
    "partitioned.lease_documents": "claim",
    "partitioned.nudged": "claim",
    "partitioned.page_reads": "read",
    "partitioned.scan": "read",
    "partitioned.aggregates": None,
    "partitioned.survey": "read",
    "partitioned.unhealed": "read",
    "partitioned.recheck": "read",
    "unscheduled": "read",
    "partitioned.head_sender": "publish",
    "attempts": "publish",
    "breaker": "publish",
    "pipeline": None,
    "per_event.delivering": "publish",
    "settling.settler": "settle",
    "settling.change": "settle",
    "settling.writes": "settle",
}
# Functions of the older tree that moved apart from the rest of their module.
OLD_FUNCTIONS: dict[tuple[str, str], str | None] = {
    **{("partitioned.scan", f): None for f in HEALING},
    ("pipeline", "hand_to"): "publish",
    ("pipeline", "settle"): "publish",
    ("pipeline", "outcome_of"): "publish",
    ("per_event.drain", "look_for_due"): "read",
    ("per_event.drain", "lease_batch"): "claim",
    ("per_event.drain", "_healing"): "claim",
    ("per_event.delivering", "deliver_batch"): "run",
}


def folder_sequence(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(folder, first module) per run of calls in one folder, consecutive repeats collapsed."""
    collapsed: list[tuple[str, str]] = []
    for folder, module in steps:
        if not collapsed or collapsed[-1][0] != folder:
            collapsed.append((folder, module))
    return collapsed


def moves_and_returns(steps: list[tuple[str, str]]) -> tuple[int, int, int]:
    """Folder moves, returns, and returns whose first call is not into the driver."""
    sequence = folder_sequence(steps)
    seen: set[str] = set()
    returns = returns_no_driver = 0
    for folder, module in sequence:
        if folder in seen:
            returns += 1
            returns_no_driver += not is_driver(module)
        seen.add(folder)
    return max(0, len(sequence) - 1), returns, returns_no_driver


def is_driver(module: str) -> bool:
    name = module.removeprefix("firestore_outbox.")
    return any(name == d or name.startswith(d) for d in DRIVERS)


def step_of(code: tuple[str, str], order: tuple[str, ...], old: bool) -> int | None:
    """The place in `order` of the step of `code` (module, function), or None for code of
    no step; `old`: the tree is from before the folders by step (`OLD_STEPS`)."""
    module, function = code
    name = module.removeprefix("firestore_outbox.")
    if not name.startswith("relay."):
        return None
    name = name.removeprefix("relay.")
    step: str | None
    if not old:
        step = name.split(".")[0]
    elif (name, function) in OLD_FUNCTIONS:
        step = OLD_FUNCTIONS[name, function]
    else:
        step = OLD_STEPS.get(name)
    return order.index(step) if step in order else None


def short(module: str) -> str:
    return module.removeprefix("firestore_outbox.")


def steps_back(edges: list[Edge], leases: str) -> list[str]:
    """The calls (caller -> callee) from one step into an earlier one."""
    back = []
    old = not any(e[1][0].startswith("firestore_outbox.relay.run.") for e in edges)
    for caller, callee in edges:
        if caller[0] == callee[0]:
            continue  # within one module (a comprehension, a closure): one place to read
        before = step_of(caller, ORDER[leases], old)
        after = step_of(callee, ORDER[leases], old)
        if before is not None and after is not None and after < before:
            back.append(f"{short(caller[0])} -> {short(callee[0])}.{callee[1]}")
    return back


def count(calls: list[tuple[str, str]], edges: list[Edge], leases: str) -> dict[str, Any]:
    """The figures of one traced run; `calls` are (folder, module) in call order, `edges`
    (caller module, called module) for each of them."""
    moves, returns, returns_no_driver = moves_and_returns(calls)
    back = steps_back(edges, leases)
    first: dict[str, str] = {}
    for folder, module in calls:
        first.setdefault(module, folder)
    reading = [(folder, module) for module, folder in first.items()]
    read_moves, read_returns, _ = moves_and_returns(reading)
    return {
        "files": len(first),
        "folders": len({folder for folder, _ in calls}),
        "moves": moves,
        "returns": returns,
        "returnsNoDriver": returns_no_driver,
        "readMoves": read_moves,
        "readReturns": read_returns,
        "stepsBack": len(back),
        "stepsBackSeen": sorted(set(back)),
        "folderSequence": [folder for folder, _ in folder_sequence(calls)],
        "readingOrder": list(first),
    }


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
