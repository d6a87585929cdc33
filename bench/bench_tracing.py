"""What OpenTelemetry costs the relay per delivery attempt, side by side in one run.

    python bench/bench_tracing.py            # 20,000 attempts, 5 rounds per setting
    python bench/bench_tracing.py --smoke    # CI: a few hundred, not kept

Each round is a fresh process running the relay's per-attempt telemetry (`publish_span` with a
stored creation context, `record_outcome`, `record_attempt`) around a publisher that does
nothing, with the OpenTelemetry API alone (nothing configured: the default) or with the SDK
installed and nothing exported (spans recorded and dropped, metrics aggregated in memory).
Rounds alternate between the two; the median CPU microseconds per attempt of each are kept
and their difference is the SDK's cost per delivered event, to set against the relay's CPU
per event from `bench_relay.py` (`--relay-cpu-ms`, measured in the same session).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ROUND = """
import json, sys, time
if sys.argv[1] == "sdk":
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    trace.set_tracer_provider(TracerProvider())
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
from app.metrics import record_attempt
from app.tracing import publish_span, record_outcome
labels = {"messaging.system": "http", "messaging.destination.name": "127.0.0.1:8000"}
created = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
n = int(sys.argv[2])
started = time.process_time()
for i in range(n):
    with publish_span("http", "127.0.0.1:8000", str(i), created, 1) as (span, carried):
        outcome = "delivered"
    record_outcome(span, outcome, None)
    record_attempt(labels, outcome, None, 0.001, 0.5)
print(json.dumps((time.process_time() - started) / n * 1e6))
"""


def one_round(setting: str, attempts: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", ROUND, setting, str(attempts)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return float(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--relay-cpu-ms", type=float, help="relay CPU ms per event, same session")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.attempts, args.rounds = 300, 1
    rounds: dict[str, list[float]] = {"api": [], "sdk": []}
    for n in range(args.rounds):
        for setting in ("api", "sdk") if n % 2 == 0 else ("sdk", "api"):
            rounds[setting].append(one_round(setting, args.attempts))
    api, sdk = (statistics.median(rounds[s]) for s in ("api", "sdk"))
    result = {"apiUsPerAttempt": round(api, 1), "sdkUsPerAttempt": round(sdk, 1)}
    result["sdkCostUs"] = round(sdk - api, 1)
    if args.relay_cpu_ms:
        result["shareOfRelayCpu"] = round((sdk - api) / (args.relay_cpu_ms * 1000), 4)
    print(json.dumps({**result, "rounds": rounds}, indent=2))
    if not args.smoke:
        out = ROOT / "bench" / "results" / "tracing.json"
        out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
