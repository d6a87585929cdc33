"""One benchmark run: a backlog, a downstream, maybe a slow link, and N relay processes.

Every process that is measured runs on its own: the relays (`relay_worker.py`), the
downstream (`downstream.py`) and the delaying proxy (`latency_proxy.py`), so that a relay's
CPU time is its own and no two of them share a GIL.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ceiling import ceiling
from process_cpu import ServerCpu, listener_pid, port_of
from variants import Variant

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import reset_emulator

HERE = Path(__file__).resolve().parent
PROJECT = "bench-outbox"


@dataclass(frozen=True)
class Scenario:
    """Downstream answer latency, an added Firestore round trip, how many relays at once,
    and the backlog's shape (`bench/workloads.py`: `project` or `contract`)."""

    name: str
    downstream_ms: float = 0.0
    firestore_rtt_ms: float = 0.0
    relays: int = 1
    shape: str = "project"


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("downstream-0ms"),
        Scenario("downstream-10ms", downstream_ms=10.0),
        Scenario("firestore-rtt-40ms", firestore_rtt_ms=40.0),
        Scenario("four-relays", relays=4),
        # Events another producer wrote with the contract's fields only: the relay heals them.
        Scenario("contract-shape-0ms", shape="contract"),
        Scenario("contract-shape-10ms", downstream_ms=10.0, shape="contract"),
    )
}


@contextmanager
def helper(script: str, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """A helper process that prints its address on its first line and runs until its stdin
    closes; yields the address and the process (whose last line is the helper's report)."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process.stdout.readline().strip(), process
    finally:
        process.stdin.close()
        process.wait(timeout=60)


@contextmanager
def downstream(latency_ms: float) -> Iterator[dict[str, Any]]:
    """A downstream process (`downstream.py`); the yielded dict gets `url`, then its tally
    (`deliveries`, `distinct`, `latenciesMs`) when it stops."""
    with helper("downstream.py", f"--latency-ms={latency_ms}") as (url, process):
        state: dict[str, Any] = {"url": url, "pid": process.pid}
        try:
            yield state
        finally:
            process.stdin.close()  # type: ignore[union-attr]
            state.update(json.loads(process.stdout.readline() or "{}"))  # type: ignore[union-attr]


def round_trip_ms(host: str, samples: int = 15) -> float:
    """The median time of one small Firestore read through `host`, after one to connect."""
    db = get_db_client(Settings(project_id=PROJECT, emulator_host=host))
    probe = db.collection("rtt-probe").document("probe")
    probe.get()
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        probe.get()
        times.append((time.perf_counter() - started) * 1000)
    db.close()
    return statistics.median(times)


def tree_env(pythonpath: Path | None) -> dict[str, str]:
    """The environment of a process that must import the relay from `pythonpath` (None:
    ours); this checkout's root comes after it, for the reference application (`app`)."""
    env = dict(os.environ)
    paths = [str(pythonpath) if pythonpath else "", str(HERE.parent), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


def start_workers(
    stack: ExitStack, count: int, spec: dict[str, Any], pythonpath: Path | None
) -> list[subprocess.Popen[str]]:
    env = tree_env(pythonpath)
    workers = []
    for n in range(count):
        # The first worker writes the backlog (with its own code) before it says it is ready.
        own = {**spec, "seed": spec["seed"] if n == 0 else 0}
        worker = subprocess.Popen(
            [sys.executable, str(HERE / "relay_worker.py"), json.dumps(own)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        stack.callback(worker.kill)
        ready = json.loads(worker.stdout.readline() or "{}")  # type: ignore[union-attr]
        if not ready.get("ready"):
            raise SystemExit(f"a relay worker did not start (exit {worker.wait()})")
        if pythonpath is not None and not ready["app"].startswith(str(pythonpath)):
            raise SystemExit(f"a worker imported {ready['app']}, not the tree {pythonpath}")
        workers.append(worker)
    return workers


def run(
    name: str,
    variant: Variant,
    scenario: Scenario,
    events: int,
    emulator: str,
    pythonpath: Path | None,
    config: dict[str, Any],
) -> dict[str, Any]:
    """Drain a fresh backlog of `events` with `scenario.relays` processes of `variant`."""
    reset_emulator(emulator, PROJECT)
    row: dict[str, Any] = {"variant": name, "scenario": scenario.name, "relays": scenario.relays}
    with ExitStack() as stack:
        tally = stack.enter_context(downstream(scenario.downstream_ms))
        host = emulator
        # The servers whose CPU shares the machine with the relays (the emulator: its Java
        # process, found by its port, under the gcloud wrapper).
        servers = {"emulator": listener_pid(port_of(emulator)), "downstream": tally["pid"]}
        if scenario.firestore_rtt_ms:
            delay = f"--delay-ms={scenario.firestore_rtt_ms / 2}"
            host, proxy = stack.enter_context(
                helper("latency_proxy.py", f"--target={emulator}", delay)
            )
            servers["proxy"] = proxy.pid
            slow, direct = round_trip_ms(host), round_trip_ms(emulator)
            row.update(rttMs=round(slow, 1), directRttMs=round(direct, 1))
            row["addedRttMs"] = round(slow - direct, 1)
        spec: dict[str, Any] = {"runner": variant.runner, "emulator": host, "project": PROJECT}
        spec["telemetry"] = variant.telemetry
        # The backlog is written straight to the emulator, not through the slow link.
        spec.update(url=tally["url"], config=config, seed=events, seedEmulator=emulator)
        spec["shape"] = scenario.shape
        workers = start_workers(stack, scenario.relays, spec, pythonpath)
        server_cpu = ServerCpu(servers)
        server_cpu.start()
        for worker in workers:  # all at once: they race for one backlog
            worker.stdin.write("go\n")  # type: ignore[union-attr]
            worker.stdin.flush()  # type: ignore[union-attr]
        results = []
        for worker in workers:
            line = worker.stdout.readline()  # type: ignore[union-attr]
            if worker.wait(timeout=600) or not line:
                raise SystemExit(f"{name} in {scenario.name}: a relay worker failed")
            results.append(json.loads(line))
        spent = server_cpu.stop()
    figures = measures(results, tally, events, name, scenario)
    relay_cpu = sum(r["cpuSeconds"] for r in results)
    return {**row, **figures, "ceiling": ceiling(relay_cpu, spent, events, os.cpu_count() or 1)}


def measures(
    results: list[dict[str, Any]], tally: dict[str, Any], events: int, name: str, scenario: Scenario
) -> dict[str, Any]:
    """The run's figures per delivered event, from the workers' reports and the downstream's."""
    summary: Counter[str] = Counter()
    rpcs: Counter[str] = Counter()
    reads_by: Counter[str] = Counter()
    for result in results:
        summary.update(result["summary"])
        rpcs.update(result["rpcs"])
        reads_by.update(result.get("readsBy", {}))
    if summary["processed"] != events or tally.get("distinct") != events:
        raise SystemExit(
            f"{name} in {scenario.name}: {summary['processed']} settled, "
            f"{tally.get('distinct')} distinct deliveries, of {events} events"
        )
    seconds = max(r["ended"] for r in results) - min(r["started"] for r in results)

    def per_event(total: float, digits: int = 4) -> float:
        return round(total / events, digits)

    return {
        "events": events,
        "seconds": round(seconds, 3),
        "eventsPerSecond": round(events / seconds, 1),
        "deliveries": tally["deliveries"],
        "duplicates": tally["deliveries"] - events,
        "readsPerEvent": per_event(sum(r["reads"] for r in results)),
        "billedReadsPerEvent": per_event(sum(r["billedReads"] for r in results)),
        "writesPerEvent": per_event(sum(r["writes"] for r in results)),
        "rpcsPerEvent": per_event(sum(rpcs.values())),
        "cpuMsPerEvent": per_event(sum(r["cpuSeconds"] for r in results) * 1000, 3),
        # Leases lost to another relay, and settles refused because the lease had moved on.
        "lostRacesPerEvent": per_event(summary["contended"] + summary["lostLeases"]),
        "rpcs": dict(rpcs),
        # Every read of the run by kind (`BatchGetDocuments`: the partition lease documents,
        # missing ones too; `RunQuery`: event pages and heal scans), and the reads billed for
        # queries that returned nothing and for aggregations (COUNTs).
        "readsBy": dict(reads_by),
        "relaySummary": dict(summary),
        # Each relay's share: when it started and stopped (from the first start), what it
        # settled and its CPU, to tell an uneven split or an idle tail from a slow relay.
        "perRelay": [
            {
                "from": round(r["started"] - min(q["started"] for q in results), 3),
                "to": round(r["ended"] - min(q["started"] for q in results), 3),
                "processed": r["summary"].get("processed", 0),
                "partitionsClaimed": r["summary"].get("partitionsClaimed", 0),
                "runs": r["summary"].get("runs", 0),
                "cpuSeconds": round(r["cpuSeconds"], 3),
                "cpuByThread": r.get("cpuByThread", {}),
            }
            for r in results
        ],
    }
