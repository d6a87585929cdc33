"""What `event_path.py` counts on one traced run: the sequence of `firestore_outbox` calls
(all threads, in the order they start) reduced to folders, files and steps.

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
"""

from __future__ import annotations

from typing import Any

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
