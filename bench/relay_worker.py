"""One relay process of a benchmark run; `bench_relay.py` starts one per relay.

    python bench/relay_worker.py '{"runner": "relay", "emulator": "127.0.0.1:8080", ...}'

Writes the backlog first when told to (`"seed": n`, with the `app` it imports), builds its
Firestore client (metered on the wire, `firestore_outbox.testing.metering`) and relay, prints
`{"ready": ...}`, waits for a line on stdin (so that start-up stays outside the timing and
concurrent relays start together), drains until a run of its relay delivers nothing, then
prints one JSON line: wall-clock start and end, the process's CPU seconds over the drain, the
documents read and written, and the relay's summary counts summed over its runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import tree
from reference_loop import run_reference
from thread_cpu import ThreadCpu
from workloads import seed

TREE = tree.load()  # this checkout's relay, or an older commit's (bench/tree.py)
Settings, get_db_client, Relay, RelayConfig = (
    TREE.Settings,
    TREE.get_db_client,
    TREE.Relay,
    TREE.RelayConfig,
)


def bench_meter() -> Any:
    """This checkout's `firestore_outbox.testing.metering.meter`, whichever tree the relay runs
    from (an older commit's comes first on `PYTHONPATH`): every variant is metered by the same
    code, whose CPU time counts as the relay's, so it must cost all of them the same."""
    path = Path(__file__).resolve().parent.parent / "firestore_outbox/testing/metering.py"
    spec = importlib.util.spec_from_file_location("bench_metering", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.meter


def drain_relay(db: Any, settings: Any, spec: dict[str, Any]) -> Counter[str]:
    config = tree.relay_config(
        TREE, spec["url"], time_budget_seconds=3600.0, **spec.get("config", {})
    )
    relay = Relay(db, settings, config)
    totals: Counter[str] = Counter()
    while True:
        summary = relay.run()
        totals.update({k: v for k, v in summary.items() if type(v) is int})
        totals["runs"] += 1
        if summary["status"] != "ok":
            raise SystemExit(f"relay failed: {summary}")
        # Drained, and this run delivered nothing: a run that stopped with events it had
        # not reached (another producer's beyond a heal scan, say) says drained too.
        if summary["stoppedBy"] == "drained" and not summary["processed"]:
            return totals


def install_telemetry(signals: str = "all") -> None:
    """The OpenTelemetry SDK with nothing exported: every span recorded and dropped, every
    measurement aggregated in memory (the cost of tracing and metrics, not of a network).
    `signals`: `traces`, `metrics` or `all`."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    if signals in ("traces", "all"):
        trace.set_tracer_provider(TracerProvider())
    if signals in ("metrics", "all"):
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))


def profiler() -> subprocess.Popen[bytes] | None:
    """With BENCH_PROFILE=dir, py-spy sampling the thread holding the GIL (where the CPU of
    Python code goes) into dir/relay-PID.txt (collapsed stacks, for a flame graph), at
    BENCH_PROFILE_RATE samples a second (100 unless set); its figures are then slowed by the
    sampling: for finding where the CPU goes, not for ratios."""
    into = os.environ.get("BENCH_PROFILE")
    if not into:
        return None
    out = os.path.join(into, f"relay-{os.getpid()}.txt")
    spy = os.path.join(os.path.dirname(sys.executable), "py-spy")
    command = [spy, "record", "--pid", str(os.getpid()), "--format", "raw", "-o", out]
    rate = os.environ.get("BENCH_PROFILE_RATE", "100")  # samples a second
    process = subprocess.Popen(
        [*command, "--gil", "--rate", rate, "--nonblocking"], stdout=sys.stderr, stderr=sys.stderr
    )
    time.sleep(1.0)  # attached before the drain starts
    return process


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("telemetry"):  # true (both signals), or one signal by name
        install_telemetry("all" if spec["telemetry"] is True else spec["telemetry"])
    if spec.get("account"):  # bench_tracing.py: the CPU time of the per-attempt telemetry
        from telemetry_account import account

        telemetry = account()
    settings = Settings(project_id=spec["project"], emulator_host=spec["emulator"])
    if spec.get("firestoreTimeoutSeconds"):  # a relay slowed down (under valgrind) waits longer
        settings = replace(settings, firestore_timeout_seconds=spec["firestoreTimeoutSeconds"])
    if spec.get("seed"):  # on a client of its own: not metered
        seeding = Settings(project_id=spec["project"], emulator_host=spec["seedEmulator"])
        seed(seeding, spec["seed"], spec.get("shape", "project"))
    db = get_db_client(settings)
    counts = bench_meter()(db)
    print(json.dumps({"ready": True, "app": TREE.where}), flush=True)
    sys.stdin.readline()
    spy = profiler()
    threads = ThreadCpu()
    threads.start()
    started, cpu = time.time(), time.process_time()
    if spec["runner"] == "reference":
        totals = Counter(processed=run_reference(db, settings.outbox_collection, spec["url"]))
    else:
        totals = drain_relay(db, settings, spec)
    cpu, ended = time.process_time() - cpu, time.time()
    by_thread = threads.stop()
    # The harness's own sampler thread is not the relay's CPU (about 0.02 ms per event).
    cpu -= by_thread.get(ThreadCpu.NAME, 0.0)
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)
    ops = counts.snapshot()
    result = {
        "started": started,
        "ended": ended,
        "cpuSeconds": cpu,
        "reads": ops.get("reads", 0),
        "billedReads": counts.billed_reads,
        "writes": ops.get("writes", 0),
        "cpuByThread": by_thread,
        "rpcs": {k[4:]: v for k, v in ops.items() if k.startswith("rpc:")},
        # Documents received by kind of call (streamed ones), and the reads billed for none.
        "readsBy": {
            **counts.reads_by_method(),
            "emptyQueries": ops.get("emptyQueries", 0),
            "aggregations": ops.get("aggregationReads", 0),
        },
        "summary": dict(totals),
    }
    if spec.get("account"):
        result["telemetrySeconds"] = telemetry.seconds
        result["telemetryByCall"] = telemetry.by_call()
    print(json.dumps(result), flush=True)
    db.close()


if __name__ == "__main__":
    main()
