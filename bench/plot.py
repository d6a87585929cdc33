"""Draw the benchmark's figure: throughput against concurrency, and delivery latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server
import matplotlib.pyplot as plt


def draw(result: dict[str, Any], path: Path) -> None:
    """Left: events/s against concurrency per downstream latency, with the reference loop and
    the floor as lines. Right: the follow mode's commit-to-delivery latency distribution."""
    runs = result["runs"]
    follow = result.get("follow")
    figure, axes = plt.subplots(1, 2 if follow else 1, figsize=(12 if follow else 6.5, 4.5))
    left = axes[0] if follow else axes
    colours = {0.0: "tab:blue", 10.0: "tab:orange"}
    for latency in sorted({r["latencyMs"] for r in runs if r["system"] == "ours"}):
        colour = colours.get(latency)
        ours = sorted(
            (r for r in runs if r["system"] == "ours" and r["latencyMs"] == latency),
            key=lambda r: r["concurrency"],
        )
        left.plot(
            [r["concurrency"] for r in ours],
            [r["eventsPerSecond"] for r in ours],
            marker="o",
            color=colour,
            label=f"our relay, downstream {latency:g} ms",
        )
        for r in runs:
            if r["system"] == "reference" and r["latencyMs"] == latency:
                left.axhline(
                    r["eventsPerSecond"],
                    color=colour,
                    linestyle=":",
                    label=f"reference loop, {latency:g} ms",
                )
    for r in runs:
        if r["system"] == "floor":
            left.axhline(r["eventsPerSecond"], color="grey", linestyle="--", label="floor")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("publish concurrency")
    left.set_ylabel("events delivered per second")
    left.set_title(f"Draining {runs[0]['events']:,} events (Firestore emulator)")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=8)
    if follow:
        right = axes[1]
        latencies = sorted(follow["latenciesMs"])
        share = [(i + 1) / len(latencies) for i in range(len(latencies))]
        right.plot(latencies, share, color="tab:green")
        for name in ("p50", "p99"):
            right.axvline(
                follow[name], color="grey", linestyle=":", label=f"{name} {follow[name]:.0f} ms"
            )
        right.set_xscale("log")
        right.set_xlabel("commit to delivery, ms")
        right.set_ylabel("share of events delivered")
        right.set_title(f"outbox relay --follow at {follow['rate']:g} events/s")
        right.grid(True, which="both", alpha=0.3)
        right.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
