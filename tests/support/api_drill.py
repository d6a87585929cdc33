"""The front door's drill (the seed design's k6 scenario): concurrent clients, each reusing
a key for 3 requests with alternating bodies, and replaying every 201 at once.

Shared by tests/e2e/example/test_api_drill.py (a short run, asserted) and bench/bench_api.py (a
longer
run, timed against the bare endpoint).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import requests

BODIES = (
    {"customerId": "drill", "items": [{"productId": "sku-1", "quantity": 1}]},
    {"customerId": "drill", "items": [{"productId": "sku-1", "quantity": 2}]},
)


@dataclass
class DrillRun:
    """What the clients saw: statuses, latencies (ms) by kind, every 201 body by key."""

    statuses: Counter[int] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    created: dict[str, set[bytes]] = field(default_factory=lambda: defaultdict(set))
    replays_differing: int = 0
    elapsed: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())


def _kind(answer: requests.Response) -> str:
    if answer.status_code == 201:
        return "replay" if answer.headers.get("Idempotent-Replayed") == "true" else "first"
    return str(answer.status_code)


def run_drill(url: str, run_id: str, *, clients: int = 40, iterations: int = 6) -> DrillRun:
    """Each client sends `iterations` keyed POSTs (key changes every 3), bodies alternating."""
    run = DrillRun()

    def send(session: requests.Session, key: str, body: dict[str, object]) -> requests.Response:
        headers = {"Idempotency-Key": key, "X-Tenant-Id": "drill"}
        started = time.perf_counter()
        answer = session.post(f"{url}/orders", json=body, headers=headers, timeout=60)
        took = (time.perf_counter() - started) * 1000
        with run.lock:
            run.statuses[answer.status_code] += 1
            run.latencies[_kind(answer)].append(took)
            if answer.status_code == 201:
                run.created[key].add(answer.content)
        return answer

    def client(number: int) -> None:
        with requests.Session() as session:
            for iteration in range(iterations):
                key = f'"{run_id}-{number}-{iteration // 3}"'
                body = BODIES[iteration % 2]
                answer = send(session, key, body)
                if answer.status_code == 201:  # the k6 check: a replay equals its answer
                    again = send(session, key, body)
                    if (again.status_code, again.content) != (201, answer.content):
                        with run.lock:
                            run.replays_differing += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(client, range(clients)))
    run.elapsed = time.perf_counter() - started
    return run


def run_bare(url: str, *, clients: int = 40, iterations: int = 6) -> DrillRun:
    """The same load without keys, against the order API without the middleware."""
    run = DrillRun()

    def client(number: int) -> None:
        with requests.Session() as session:
            for iteration in range(iterations):
                started = time.perf_counter()
                answer = session.post(
                    f"{url}/orders",
                    data=json.dumps(BODIES[iteration % 2]),
                    headers={"Content-Type": "application/json"},
                    timeout=60,
                )
                with run.lock:
                    run.statuses[answer.status_code] += 1
                    run.latencies["bare"].append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(client, range(clients)))
    run.elapsed = time.perf_counter() - started
    return run


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0
