"""Draw the benchmark's figure: events/s per scenario, one bar per relay variant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server
import matplotlib.pyplot as plt


def draw(result: dict[str, Any], path: Path) -> None:
    """Grouped bars on a log scale: each scenario a group, each variant a bar, labelled with
    its events/s; the figures come from one run, so bars of a group compare fairly."""
    runs = result["runs"]
    scenarios = list(dict.fromkeys(r["scenario"] for r in runs))
    variants = list(dict.fromkeys(r["variant"] for r in runs))
    width = 0.8 / len(variants)
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for v, variant in enumerate(variants):
        xs, ys = [], []
        for s, scenario in enumerate(scenarios):
            for r in runs:
                if (r["variant"], r["scenario"]) == (variant, scenario):
                    xs.append(s + (v - (len(variants) - 1) / 2) * width)
                    ys.append(r["eventsPerSecond"])
        bars = axes.bar(xs, ys, width, label=result["variants"].get(variant, variant))
        axes.bar_label(bars, labels=[f"{y:,.0f}" for y in ys], fontsize=7)
    axes.set_xticks(range(len(scenarios)), scenarios)
    axes.set_yscale("log")
    axes.set_ylabel("events delivered per second")
    axes.set_title(f"Relays side by side, Firestore emulator ({result['date']})")
    axes.grid(True, axis="y", which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
