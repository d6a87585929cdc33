"""What this machine could deliver at all: events/s bounded by the CPU every process spends.

The relay, the Firestore emulator, the downstream and (in the +40 ms scenario) the latency
proxy share the machine's CPUs. From each one's CPU seconds per delivered event in a run:

- `withoutRelayCpu` = CPUs / the others' CPU per event: the events/s of a relay that used no
  CPU at all; no relay can beat it on this machine with these servers.
- `withRelayCpu` = CPUs / everyone's CPU per event: the events/s of this relay if it had the
  machine to itself, CPU-bound (the benchmark's relays are: they make 400-750 events/s).

Both assume the machine runs nothing else; a busy machine (other engineers' work) lowers what
a run reaches, not these bounds.
"""

from __future__ import annotations

from typing import Any


def ceiling(
    relay_cpu_seconds: float, servers: dict[str, float | None], events: int, cpus: int
) -> dict[str, Any]:
    """The run's CPU per event by process kind (ms) and the two bounds; empty when a server
    could not be measured (the bounds would be too high) or nothing was delivered."""
    if not events or not servers or any(spent is None for spent in servers.values()):
        return {}
    others = sum(spent for spent in servers.values() if spent is not None) / events
    relay = relay_cpu_seconds / events
    return {
        "cpus": cpus,
        "cpuMsPerEvent": {
            "relay": round(relay * 1000, 3),
            **{
                name: round(spent * 1000 / events, 3)
                for name, spent in servers.items()
                if spent is not None
            },
            "others": round(others * 1000, 3),
        },
        "withoutRelayCpu": round(cpus / others, 1) if others else None,
        "withRelayCpu": round(cpus / (others + relay), 1) if others + relay else None,
    }


def beside(target_eps: float, row: dict[str, Any] | None, base_eps: float) -> dict[str, Any]:
    """A throughput target's figures beside it: the events/s it asks for, the machine's two
    bounds in the candidate's run and the ratios over `base_eps` they would give, and whether
    the target can be shown on this machine at all (needs no more than `withoutRelayCpu`)."""
    bound = (row or {}).get("ceiling") or {}
    if not bound or not base_eps:
        return {}
    free, own = bound["withoutRelayCpu"], bound["withRelayCpu"]
    return {
        "eventsPerSecondNeeded": round(target_eps, 1),
        "withoutRelayCpu": free,
        "withRelayCpu": own,
        "ratioWithoutRelayCpu": round(free / base_eps, 1) if free else None,
        "ratioWithRelayCpu": round(own / base_eps, 1) if own else None,
        "reachableOnThisMachine": bool(free and free >= target_eps),
    }
