"""The benchmark's ratios between variants of one run, and issue 14's targets on them."""

from __future__ import annotations

from typing import Any

from ceiling import beside
from variants import variant


def _row(rows: list[dict[str, Any]], variant: str, scenario: str) -> dict[str, Any] | None:
    for row in rows:
        if (row["variant"], row["scenario"]) == (variant, scenario):
            return row
    return None


def _eps(rows: list[dict[str, Any]], variant: str, scenario: str) -> float | None:
    row = _row(rows, variant, scenario)
    return None if row is None else float(row["eventsPerSecond"])


def _ratio(top: float | None, bottom: float | None) -> float | None:
    return round(top / bottom, 2) if top is not None and bottom else None


def _paired(
    rows: list[dict[str, Any]], top: dict[str, Any], variant: str, scenario: str
) -> list[float] | None:
    """The ratio within each repeat: the runs of one repeat ran within minutes of each other,
    so a machine busier in one repeat than in another moves both sides of its ratio alike."""
    other = _row(rows, variant, scenario)
    if other is None or "repeats" not in top or "repeats" not in other:
        return None
    pairs = zip(top["repeats"], other["repeats"], strict=True)
    return [round(a / b, 2) for a, b in pairs if b]


def beyond_one(row: dict[str, Any]) -> dict[str, Any]:
    """Every read of `row`'s run beyond one per event, named: the partition lease documents
    (`BatchGetDocuments`, missing ones too), event documents read more than once, and the
    reads billed for no document (queries that came back empty, the COUNTs)."""
    by = row.get("readsBy") or {}
    if not by:
        return {}
    return {
        "scenario": row["scenario"],
        "events": row["events"],
        "leaseDocuments": by.get("BatchGetDocuments", 0),
        "eventReadsBeyondOne": by.get("RunQuery", 0) - row["events"],
        "billedEmptyQueries": by.get("emptyQueries", 0),
        "billedCounts": by.get("aggregations", 0),
    }


# Each contract-shape scenario and the scenario of the same run with the project's own events.
PROJECT_SHAPE = {"contract-shape-0ms": "downstream-0ms", "contract-shape-10ms": "downstream-10ms"}


def ratios(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per scenario and relay variant: events/s over the reference loop's and over today's
    relay's in the same scenario (of the medians, and within each repeat), and (several
    relays) over its own single relay's at 0 ms."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        name, scenario = row["variant"], row["scenario"]
        if variant(name).runner == "reference":
            continue
        eps = float(row["eventsPerSecond"])
        entry: dict[str, Any] = {
            "overReference": _ratio(eps, _eps(rows, "reference", scenario)),
            "overToday": _ratio(eps, _eps(rows, "today", scenario)) if name != "today" else None,
        }
        if (project := PROJECT_SHAPE.get(scenario)) is not None:
            entry["overProjectShape"] = _ratio(eps, _eps(rows, name, project))
            entry["overProjectShapeByRepeat"] = _paired(rows, row, name, project)
        if row["relays"] > 1:
            entry["overOneRelay"] = _ratio(eps, _eps(rows, name, "downstream-0ms"))
            entry["overOneRelayByRepeat"] = _paired(rows, row, name, "downstream-0ms")
        entry["overReferenceByRepeat"] = _paired(rows, row, "reference", scenario)
        if name != "today":
            entry["overTodayByRepeat"] = _paired(rows, row, "today", scenario)
        table.setdefault(scenario, {})[name] = {k: v for k, v in entry.items() if v is not None}
    return table


def targets(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Issue 14's "Measure" targets for the candidate relay; a figure the run lacks is left out."""
    # The relay the targets are about: the last relay variant run other than today's and
    # other than one with the OpenTelemetry SDK on (`traced` measures tracing's cost).
    relays = [r["variant"] for r in rows if variant(r["variant"]).runner == "relay"]
    newer = [name for name in relays if name != "today" and not variant(name).telemetry]
    candidate = newer[-1] if newer else relays[-1] if relays else None
    if candidate is None:
        return {}
    mine = [row for row in rows if row["variant"] == candidate]
    table = ratios(rows)
    checks: dict[str, Any] = {"candidate": candidate}

    def check(name: str, value: float | None, target: str, met: bool) -> None:
        if value is not None:
            checks[name] = {"value": value, "target": target, "met": met}

    def bound(name: str, factor: float, base: str, scenario: str) -> None:
        """Beside a throughput target: what this machine could reach at all (`ceiling.py`)."""
        base_eps = _eps(rows, base, scenario)
        if name in checks and base_eps:
            row = _row(rows, candidate, scenario)
            checks[name]["ceiling"] = beside(factor * base_eps, row, base_eps)

    reads = max(row["readsPerEvent"] for row in mine)
    writes = max(row["writesPerEvent"] for row in mine)
    check("readsPerEvent", reads, "<= 1", reads <= 1)
    if "readsPerEvent" in checks:
        worst = max(mine, key=lambda row: row["readsPerEvent"])
        checks["readsPerEvent"]["beyondOnePerEvent"] = beyond_one(worst)
    check("writesPerEvent", writes, "<= 1.02", writes <= 1.02)
    at10 = table.get("downstream-10ms", {}).get(candidate, {}).get("overReference")
    check("overReferenceAt10ms", at10, ">= 25", (at10 or 0) >= 25)
    bound("overReferenceAt10ms", 25, "reference", "downstream-10ms")
    if candidate != "today":
        at0 = table.get("downstream-0ms", {}).get(candidate, {}).get("overToday")
        check("overTodayAt0ms", at0, ">= 1.3", (at0 or 0) >= 1.3)
        bound("overTodayAt0ms", 1.3, "today", "downstream-0ms")
    slow = table.get("firestore-rtt-40ms", {}).get(candidate, {}).get("overReference")
    check("overReferenceAtFirestoreRtt40ms", slow, ">= 100", (slow or 0) >= 100)
    bound("overReferenceAtFirestoreRtt40ms", 100, "reference", "firestore-rtt-40ms")
    for row in mine:
        if row["relays"] > 1:
            lost = row["lostRacesPerEvent"]
            check("lostRacesPerEventFourRelays", lost, "near 0 (<= 0.01)", lost <= 0.01)
            alone = table[row["scenario"]][candidate].get("overOneRelay")
            check("fourRelaysOverOne", alone, ">= 1", (alone or 0) >= 1)
    for scenario in PROJECT_SHAPE:  # issue 25: another producer's events drain as fast
        shape = table.get(scenario, {}).get(candidate, {}).get("overProjectShape")
        check(f"contractShapeOverProjectShape{scenario[15:]}", shape, ">= 0.8", (shape or 0) >= 0.8)
    single = _row(rows, candidate, "downstream-0ms")
    if single is not None:
        cpu = single["cpuMsPerEvent"]
        check("cpuMsPerEventAt0ms", cpu, "reported (today's in-process figure: 0.59)", True)
    return checks
