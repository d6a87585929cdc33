"""Which signals OpenTelemetry's standard `OTEL_*` variables ask this library to export over
OTLP: one answer for the relay, which then installs the exporters
(`firestore_outbox/observability/telemetry.py`), and for
the package build, which then ships the `otel` extra (`outbox fc build`).

A signal is exported when an OTLP endpoint is set for it (`OTEL_EXPORTER_OTLP_ENDPOINT`, or
its own `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`), its exporter is not
`none` (`OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`) and `OTEL_SDK_DISABLED` is not `true`.
Standard library only: the build runs on the deploying machine's python3, where the project's
dependencies need not be installed.
"""

from __future__ import annotations

from collections.abc import Mapping

# ARMS puts its token in the endpoint's path: firestore_outbox/observability/logs.py masks these
# like the downstream URL.
OTLP_ENDPOINTS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
SIGNALS = ("TRACES", "METRICS")


def otlp_signals(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The signals (`TRACES`, `METRICS`) `environ` asks to export over OTLP; none at all when
    `OTEL_SDK_DISABLED` is `true`."""
    if (environ.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return ()
    return tuple(signal for signal in SIGNALS if _wanted(environ, signal))


def _wanted(environ: Mapping[str, str], signal: str) -> bool:
    if environ.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower() == "none":
        return False
    endpoints = (OTLP_ENDPOINTS[0], f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    return any((environ.get(name) or "").strip() for name in endpoints)
