"""Where the relay's per-event telemetry CPU goes: each call the relay makes for one delivery
attempt, timed alone, with the SDK's tracer provider and no exporter (and, for the metric
record, the SDK's meter provider).

    python bench/tracing_breakdown.py              # bench/results/tracing-breakdown.json
    python bench/tracing_breakdown.py --smoke      # CI: tiny, nothing kept

Each setting runs in fresh processes (a provider is set once per process), the settings
alternating round by round so that a machine getting busier slows all of them alike; each
figure is the median (and range) of the rounds' CPU microseconds per call (`process_time`,
the garbage collector on, as in the relay). A tight loop keeps the code and its data in the
CPU's caches: inside a busy relay the same calls cost more (`bench_tracing.py` measures them
there); the breakdown says which part to cut, not what the relay pays. Given a piece's name
after the setting and the count, the script runs that piece alone, untimed, for
`tracing_instructions.py` to count its instructions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench_tracing import _spread, in_fresh_process, report

ROOT = Path(__file__).resolve().parent.parent

PIECES = """
import json, sys, time
from opentelemetry import context as context_api, metrics, trace
from opentelemetry.propagate import inject
setting, n = sys.argv[1], int(sys.argv[2])
if setting != "off":
    from opentelemetry.sdk.trace import TracerProvider
    trace.set_tracer_provider(TracerProvider())
if setting == "all":
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
from opentelemetry.trace import SpanKind
from firestore_outbox.observability import publish_spans, span_context
from firestore_outbox.observability.attempt_metrics import AttemptMetrics

spans = publish_spans.PublishSpans("http", "127.0.0.1:8000")
attempt_metrics = AttemptMetrics(
    {"messaging.system": "http", "messaging.destination.name": "127.0.0.1:8000"}
)
stored = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
          "tracestate": None}
none = {"traceparent": None, "tracestate": None}
tracer = trace.get_tracer_provider().get_tracer("firestore-outbox")
parent = span_context.remote_parent(stored)
attributes = {**spans._attributes, "messaging.message.id": "e", "firestore_outbox.attempt": 1}
span = tracer.start_span("send h", context=parent, kind=SpanKind.PRODUCER, attributes=attributes)

def attempt(created):
    with spans.span("e", created, 1) as (sp, carried):
        pass
    publish_spans.record_outcome(sp, "delivered", None)

def start_end():
    tracer.start_span("send h", context=parent, kind=SpanKind.PRODUCER,
                      attributes=attributes).end()

def start_end_bare():
    tracer.start_span("send h", context=parent, kind=SpanKind.PRODUCER).end()

calls = {
    "attempt span, stored context": lambda: attempt(stored),
    "attempt span, no stored context": lambda: attempt(none),
    "parse the stored traceparent": lambda: span_context.remote_parent(stored),
    "SDK span start and end, six attributes": start_end,
    "SDK span start and end, no attributes": start_end_bare,
    "sampler": lambda: tracer.sampler.should_sample(parent, 1, "s", SpanKind.PRODUCER, attributes),
    "context attach and detach": lambda: context_api.detach(
        context_api.attach(trace.set_span_in_context(span))),
    "traceparent written from the span context": lambda: span_context.carried_fields(
        span.get_span_context()),
    "traceparent by the global propagator": lambda: inject({}, trace.set_span_in_context(span)),
    "metric record, delivered": lambda: attempt_metrics.record("delivered", None, 0.001, 0.5),
}
if setting == "off":
    calls = {k: calls[k] for k in ("attempt span, stored context",
             "attempt span, no stored context", "metric record, delivered")}
if len(sys.argv) > 3:  # one piece, untimed: its instructions are counted from outside
    call = calls[sys.argv[3]]
    for _ in range(n):
        call()
    raise SystemExit(0)
result = {}
for name, call in calls.items():
    for _ in range(n // 10):
        call()
    started = time.process_time()
    for _ in range(n):
        call()
    result[name] = (time.process_time() - started) / n * 1e6
print(json.dumps(result))
"""

SETTINGS = ("off", "traces", "all")


def one_round(setting: str, calls: int) -> dict[str, float]:
    """CPU microseconds per call of each piece, in a fresh process."""
    return dict(in_fresh_process(PIECES, setting, str(calls)))


def breakdown(rounds: int, calls: int) -> dict[str, Any]:
    """`rounds` rounds of every setting, in an order that turns round by round."""
    runs: dict[str, dict[str, list[float]]] = {s: {} for s in SETTINGS}
    for n in range(rounds):
        for setting in SETTINGS[n % 3 :] + SETTINGS[: n % 3]:
            for piece, us in one_round(setting, calls).items():
                runs[setting].setdefault(piece, []).append(us)
    return {
        setting: {piece: _spread(values, 2) for piece, values in pieces.items()}
        for setting, pieces in runs.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7, help="rounds of each setting")
    parser.add_argument("--calls", type=int, default=20_000, help="calls of each piece a round")
    parser.add_argument("--smoke", action="store_true", help="one tiny round, nothing kept")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.calls = 1, 200
    started, load_before = time.time(), os.getloadavg()
    result = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "usPerCall": breakdown(args.rounds, args.calls),
    }
    report(result, started, load_before, "tracing-breakdown.json", keep=not args.smoke)


if __name__ == "__main__":
    main()
