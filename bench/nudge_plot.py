"""`bench_nudge.py`'s plot: the commit-to-delivery latency distribution of each mode (the
share of events delivered within x ms, x on a log scale), one panel per rate, as an SVG
written by hand (no plotting library in the toolchain)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

COLOURS = {
    "timer": "#888888",
    "fc3": "#1f77b4",
    "fc3-dropped": "#9467bd",
    "process": "#2ca02c",
    "follow": "#d62728",
}
WIDTH, HEIGHT, LEFT, TOP, PANEL_W, PANEL_H = 960, 380, 60, 40, 400, 270
LOW, HIGH = 1.0, 100_000.0  # ms


def _x(ms: float, left: float) -> float:
    ms = min(max(ms, LOW), HIGH)
    return left + PANEL_W * math.log10(ms / LOW) / math.log10(HIGH / LOW)


def _y(share: float) -> float:
    return TOP + PANEL_H * (1 - share)


def write_plot(results: list[dict[str, Any]], path: Path) -> None:
    rates = sorted({r["rate"] for r in results})
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    for i, rate in enumerate(rates):
        left = LEFT + i * (PANEL_W + 70)
        parts.append(
            f'<text x="{left}" y="{TOP - 12}" font-size="13">{rate:g} commits/s: share of '
            "events delivered within x ms of the commit</text>"
        )
        parts.append(
            f'<rect x="{left}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" fill="none" '
            'stroke="#333"/>'
        )
        for decade in range(6):
            x = _x(10**decade, left)
            parts.append(f'<line x1="{x}" y1="{TOP}" x2="{x}" y2="{TOP + PANEL_H}" stroke="#ddd"/>')
            label = f"{10**decade:g}" if decade < 3 else f"{10 ** (decade - 3):g} s"
            parts.append(
                f'<text x="{x}" y="{TOP + PANEL_H + 14}" text-anchor="middle">{label}</text>'
            )
        for share in (0.5, 0.95, 0.99):
            y = _y(share)
            parts.append(
                f'<line x1="{left}" y1="{y}" x2="{left + PANEL_W}" y2="{y}" stroke="#eee"/>'
            )
            parts.append(f'<text x="{left - 4}" y="{y + 4}" text-anchor="end">{share:g}</text>')
        for n, result in enumerate(r for r in results if r["rate"] == rate):
            latencies = result["latenciesMs"]
            colour = COLOURS.get(result["mode"], "#000")
            if latencies:
                total = result["events"]
                step = max(1, len(latencies) // 400)
                points = [
                    f"{_x(ms, left):.1f},{_y((k + 1) / total):.1f}"
                    for k, ms in enumerate(latencies)
                    if k % step == 0 or k == len(latencies) - 1
                ]
                parts.append(
                    f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                    f'points="{" ".join(points)}"/>'
                )
            y = TOP + 14 + n * 14
            parts.append(
                f'<text x="{left + 6}" y="{y}" fill="{colour}">{result["mode"]}: p50 '
                f"{result['p50']} ms, p99 {result['p99']} ms</text>"
            )
    parts.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts) + "\n")
