"""The overview's chart: the backlog by status and the oldest due event's age, over the time
the page has been open, drawn on the server as inline SVG (no script, no CDN).

Each overview reading is kept as a `Sample` (a bounded history shared by the pages open on
this console); a page asks for the samples taken since it opened.
"""

from __future__ import annotations

import html
import threading
from collections import deque
from dataclasses import dataclass

from firestore_outbox.ops.history import Point

# Samples kept: at a refresh every 5 s, an hour.
HISTORY = 720
WIDTH, HEIGHT, PAD = 640, 160, 36
SERIES = (("PENDING", "#1f6fb2"), ("PROCESSING", "#8a5cc2"), ("FAILED", "#c0392b"))
AGE_COLOUR = "#d68910"
DELIVERED_COLOUR = "#1e8449"
LEGEND_CHAR_PX = 6  # about the width of a character of the axis font (11 px)


@dataclass(frozen=True)
class Sample:
    """One reading: when (seconds since the epoch), events per status, oldest due age."""

    at: float
    counts: dict[str, int]
    oldest_due_seconds: float | None


class History:
    """The last `HISTORY` samples; safe to share between the server's threads."""

    def __init__(self, size: int = HISTORY) -> None:
        self._samples: deque[Sample] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, sample: Sample) -> None:
        with self._lock:
            self._samples.append(sample)

    def since(self, at: float) -> list[Sample]:
        with self._lock:
            return [s for s in self._samples if s.at >= at]


def backlog_chart(samples: list[Sample]) -> str:
    """Two stacked SVG line charts: events by status, and the oldest due event's age."""
    if len(samples) < 2:
        return "<p class=note>The chart draws itself as the page refreshes.</p>"
    by_status = {name: [float(s.counts.get(name, 0)) for s in samples] for name, _ in SERIES}
    ages = [s.oldest_due_seconds or 0.0 for s in samples]
    times = [s.at for s in samples]
    return _svg("events by status", times, [(n, c, by_status[n]) for n, c in SERIES]) + _svg(
        "oldest due event, seconds", times, [("oldest due", AGE_COLOUR, ages)]
    )


def recent_chart(points: list[Point], truncated: bool) -> str:
    """Throughput and backlog over the last half hour, minute by minute, from what Firestore
    holds (`firestore_outbox.ops.history`): data from the first load on."""
    if len(points) < 2:
        return "<p class=note>No history yet.</p>"
    times = [p.at.timestamp() for p in points]
    lines = [
        ("delivered per minute", DELIVERED_COLOUR, [float(p.delivered) for p in points]),
        ("backlog", SERIES[0][1], [float(p.backlog) for p in points]),
    ]
    cut = "<p class=note>Busier than the reads allow: the first events only.</p>"
    return _svg("the last 30 minutes", times, lines, chart_id="recent") + (cut if truncated else "")


def _svg(
    title: str,
    times: list[float],
    lines: list[tuple[str, str, list[float]]],
    *,
    chart_id: str = "",
) -> str:
    top = max([1.0, *(v for _, _, values in lines for v in values)])
    start, span = times[0], max(times[-1] - times[0], 1e-9)

    def point(t: float, v: float) -> str:
        x = PAD + (t - start) / span * (WIDTH - 2 * PAD)
        y = HEIGHT - PAD - v / top * (HEIGHT - 2 * PAD)
        return f"{x:.1f},{y:.1f}"

    parts = [
        f"<svg class=chart{f' id={chart_id}' if chart_id else ''} role=img "
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{html.escape(title)}</title>",
        f'<text x="{PAD}" y="16" class=axis>{html.escape(title)} (max {top:g})</text>',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
        'stroke="#999"/>',
        f'<text x="{PAD}" y="{HEIGHT - 12}" class=axis>{span:.0f} s</text>',
    ]
    right = WIDTH - PAD
    for name, colour, values in reversed(lines):  # legends right-aligned, last series last
        path = " ".join(point(t, v) for t, v in zip(times, values, strict=True))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}" '
            f'data-series="{html.escape(name)}"/>'
        )
        legend = f"{name} {values[-1]:g}"
        parts.append(
            f'<text x="{right}" y="16" fill="{colour}" text-anchor="end" class=axis>'
            f"{html.escape(legend)}</text>"
        )
        right -= LEGEND_CHAR_PX * len(legend) + 16
    parts.append("</svg>")
    return "".join(parts)
