"""Where a nudged delivery's time goes, for `bench_nudge.py --trace DIR`: every process of the
run (the bench, each FC instance) appends timestamped marks to a file of its own in DIR, and
`account(DIR, ...)` joins them per event:

    commit returned ─ nudge sent (start, answered) ─ FC server received ─ instance took it
    ─ handler started ─ each Firestore call of the invocation (method, start, end)
    ─ publish of the event ─ downstream received

The clock is `time.monotonic()`: CLOCK_MONOTONIC, one clock for every process of the machine.
Firestore calls are timed at the GAPIC client (one mark per RPC, a streamed one ending with
its last response).
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_file: Any = None
current: list[str | None] = [None]  # the invocation an instance is running

RPCS = (
    "run_query",
    "batch_write",
    "batch_get_documents",
    "commit",
    "begin_transaction",
    "rollback",
    "run_aggregation_query",
    "get_document",
)


def mark(tag: str, **detail: Any) -> None:
    if _file is None:
        return
    line = json.dumps({"t": time.monotonic(), "tag": tag, "inv": current[0], **detail})
    with _lock:
        _file.write(line + "\n")
        _file.flush()


def install(directory: str, name: str) -> None:
    """Open this process's trace file and time every Firestore RPC and every publish."""
    global _file
    Path(directory).mkdir(parents=True, exist_ok=True)
    _file = open(Path(directory) / f"{name}-{os.getpid()}.jsonl", "a")  # noqa: SIM115
    from google.cloud.firestore_v1.services.firestore.client import FirestoreClient

    for method in RPCS:
        _time_rpc(FirestoreClient, method)
    from firestore_outbox.relay.publish.attempts import Attempts

    publish = Attempts._publish

    def timed_publish(self: Any, delivery: Any) -> Any:
        mark("publish", event=delivery.event_id)
        try:
            return publish(self, delivery)
        finally:
            mark("published", event=delivery.event_id)

    Attempts._publish = timed_publish  # type: ignore[method-assign]


def _time_rpc(owner: Any, method: str) -> None:
    original = getattr(owner, method)

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        result = original(self, *args, **kwargs)
        if method in ("run_query", "batch_get_documents", "run_aggregation_query"):
            return _drained(result, method, started)
        mark("rpc", rpc=method, start=started)
        return result

    setattr(owner, method, timed)


def _drained(responses: Any, method: str, started: float) -> Iterator[Any]:
    try:
        yield from responses
    finally:
        mark("rpc", rpc=method, start=started)


def _load(directory: str) -> list[dict[str, Any]]:
    marks = []
    for path in Path(directory).glob("*.jsonl"):
        for line in path.read_text().splitlines():
            if line.strip():
                marks.append({**json.loads(line), "file": path.name})
    return sorted(marks, key=lambda m: m["t"])


def account(directory: str, committed: dict[str, tuple[float, int]], arrived: dict[str, float]):
    """Per event delivered by a nudged invocation: the stages' medians (ms), and the share of
    events delivered by an invocation other than the one their own nudge started."""
    marks = _load(directory)
    sends = [m for m in marks if m["tag"] == "nudge-sent"]
    received = {m["request"]: m for m in marks if m["tag"] == "fc-received"}
    dispatched = {m["request"]: m for m in marks if m["tag"] == "fc-dispatched"}
    by_inv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in marks:
        if m.get("inv"):
            by_inv[m["inv"]].append(m)
    published_in = {m["event"]: m for m in marks if m["tag"] == "publish"}
    stages: dict[str, list[float]] = defaultdict(list)
    rpcs_before: dict[str, list[float]] = defaultdict(list)
    own = other = timer = 0
    for event, (done, partition) in committed.items():
        if event not in arrived or event not in published_in:
            continue
        pub = published_in[event]
        inv = pub["inv"]
        send = next((s for s in sends if s["start"] >= done and partition in s["partitions"]), None)
        if send is None:
            continue
        if send.get("request") != inv:
            if inv and inv in received:
                other += 1
            else:
                timer += 1
            stages["delivered by another invocation: commit->downstream"].append(
                (arrived[event] - done) * 1000
            )
            continue
        own += 1
        req = received.get(inv)
        disp = dispatched.get(inv)
        marks_inv = by_inv[inv]
        start = next((m for m in marks_inv if m["tag"] == "handler"), None)
        if req is None or start is None:
            continue
        points = [
            ("commit->nudge send start", done, send["start"]),
            ("nudge send (signed POST, 202)", send["start"], send["t"]),
            ("send start->FC received", send["start"], req["t"]),
            ("FC received->dispatched", req["t"], disp["t"] if disp else req["t"]),
            ("dispatched->handler started", disp["t"] if disp else req["t"], start["t"]),
            ("handler started->publish", start["t"], pub["t"]),
            ("publish->downstream received", pub["t"], arrived[event]),
            ("commit->downstream", done, arrived[event]),
        ]
        for name, a, b in points:
            stages[name].append((b - a) * 1000)
        before = [m for m in marks_inv if m["tag"] == "rpc" and m["t"] <= pub["t"]]
        for m in before:
            rpcs_before[m["rpc"]].append((m["t"] - m["start"]) * 1000)
        stages["Firestore RPCs before the publish (count)"].append(len(before))
        first_rpc = min((m["start"] for m in before), default=pub["t"])
        stages["handler started->first RPC"].append((first_rpc - start["t"]) * 1000)
        stages["last RPC end->publish"].append(
            (pub["t"] - max((m["t"] for m in before), default=start["t"])) * 1000
        )
        end = next((m for m in marks_inv if m["tag"] == "handler-done"), None)
        if end is not None:
            stages["publish->invocation end"].append((end["t"] - pub["t"]) * 1000)
            after = [m for m in marks_inv if m["tag"] == "rpc" and m["t"] > pub["t"]]
            stages["Firestore RPCs after the publish (count)"].append(len(after))
    out: dict[str, Any] = {
        "deliveredByOwnNudge": own,
        "deliveredByAnotherNudgedInvocation": other,
        "deliveredOtherwise": timer,
        "stagesMs": {k: _cut(v) for k, v in stages.items()},
        "rpcMsBeforePublish": {k: {**_cut(v), "n": len(v)} for k, v in rpcs_before.items()},
    }
    return out


def _cut(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {}
    return {
        "p50": round(statistics.median(values), 1),
        "p90": round(values[int(len(values) * 0.9)], 1),
        "max": round(values[-1], 1),
    }
