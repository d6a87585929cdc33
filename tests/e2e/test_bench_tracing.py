"""The tracing benchmarks on tiny runs: what they report is what the relay's telemetry did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _smoke(script: str) -> Any:
    command = [sys.executable, str(BENCH / script), "--smoke"]
    done = subprocess.run(
        command, cwd=BENCH, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # Any progress lines come first; the result is the JSON document after them.
    return json.loads(done.stdout[done.stdout.index("{\n") :])


def test_the_breakdown_times_each_call_of_every_setting() -> None:
    result = _smoke("tracing_breakdown.py")["usPerCall"]
    assert set(result) == {"off", "traces", "all"}
    assert set(result["off"]) == {
        "attempt span, stored context",
        "attempt span, no stored context",
        "metric record, delivered",
    }
    # The SDK records a span where the API alone builds none.
    off = result["off"]["attempt span, no stored context"]["median"]
    assert result["traces"]["attempt span, no stored context"]["median"] > off


@pytest.mark.emulator
def test_the_account_inside_the_relays_sees_the_sdk_s_spans() -> None:
    result = _smoke("bench_tracing.py")
    ends = result["endToEnd"]
    telemetry = {name: ends["telemetryUsPerEvent"][name]["runs"] for name in ends["cpuMsPerEvent"]}
    assert {name: len(runs) for name, runs in telemetry.items()} == {
        "off": 1,
        "traces": 1,
        "all": 1,
    }
    # Every setting's relay ran its telemetry (the account wraps the calls in each relay),
    # and recording spans and metrics took more of it than the API alone.
    assert 0 < telemetry["off"][0] < telemetry["traces"][0] < telemetry["all"][0]
    assert result["target"]["under"] == 0.05
    assert result["machine"]["loadAverageBefore"] and result["durationSeconds"] >= 0
