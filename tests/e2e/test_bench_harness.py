"""The relay benchmark's harness on a tiny run: what it counts is what the relays did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.emulator
def test_a_tiny_run_counts_documents_cpu_and_the_slow_link(
    emulator_host: str, tmp_path: Path
) -> None:
    out = tmp_path / "relay"
    command = [
        sys.executable,
        str(ROOT / "bench" / "bench_relay.py"),
        f"--emulator={emulator_host}",
        "--variants=reference,today",
        "--scenarios=downstream-0ms,firestore-rtt-40ms",
        "--events=40",
        "--reference-events=25",
        "--repeats=1",
        f"--out={out}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.with_suffix(".json").read_text())
    rows = {(r["variant"], r["scenario"]): r for r in result["runs"]}
    assert set(rows) == {
        (v, s) for v in ("reference", "today") for s in ("downstream-0ms", "firestore-rtt-40ms")
    }
    # The reference loop reads each event once (its query of 20) and updates it twice
    # (PROCESSING, then PROCESSED); today's relay leases and settles: also 1 and 2.
    for (variant, _), row in rows.items():
        events = 25 if variant == "reference" else 40
        assert row["events"] == events
        assert row["deliveries"] == events and row["duplicates"] == 0
        assert row["readsPerEvent"] == 1.0
        assert row["writesPerEvent"] == 2.0
        assert row["cpuMsPerEvent"] > 0
        assert row["lostRacesPerEvent"] == 0
    # Two 20 ms legs per round trip, measured from the client: a floor the proxy's sleeps
    # guarantee (what it adds over the direct read also carries the machine's noise).
    for variant in ("reference", "today"):
        row = rows[(variant, "firestore-rtt-40ms")]
        assert row["rttMs"] >= 40
        assert row["addedRttMs"] == pytest.approx(row["rttMs"] - row["directRttMs"], abs=0.11)
    # The machine's ceiling: every server process's CPU was found and measured (the emulator
    # by its port, here one the harness did not start), the proxy's only behind the proxy.
    for (_, scenario), row in rows.items():
        cpu = row["ceiling"]["cpuMsPerEvent"]
        assert cpu["emulator"] > 0 and ("proxy" in cpu) == (scenario == "firestore-rtt-40ms")
        assert row["ceiling"]["withoutRelayCpu"] > row["ceiling"]["withRelayCpu"] > 0
    ratios = result["ratios"]["downstream-0ms"]["today"]
    assert ratios["overReference"] > 0
    assert result["variants"]["today"].startswith("today's relay")
