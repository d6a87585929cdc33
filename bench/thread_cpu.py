"""`ThreadCpu`: a relay process's CPU time by thread kind (Linux), sampled in the background.

The relay's CPU per event is spread over its drain, its publishing pool, its settler, its
page readers and gRPC's own threads; `/proc/self/task/TID/stat` has each thread's CPU time,
and `threading.enumerate()` names the Python threads (a thread that ends takes its line with
it, so the figures are sampled every `interval` and the last seen kept). Not on Linux: empty.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class ThreadCpu:
    """Start, stop, then `by_kind()`: CPU seconds per thread name without its number."""

    NAME = "bench-thread-cpu"  # its own thread's, to be left out of the relay's figures

    def __init__(self, interval: float = 0.1) -> None:
        self._interval = interval
        self._stop = threading.Event()
        self._seen: dict[int, tuple[str, float]] = {}
        self._start: dict[int, float] = {}
        self._thread = threading.Thread(target=self._run, name=self.NAME, daemon=True)

    def start(self) -> None:
        self._start = {tid: cpu for tid, cpu in _task_cpu().items()}
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self._sample()
        kinds: Counter[str] = Counter()
        for tid, (name, cpu) in self._seen.items():
            kinds[name] += cpu - self._start.get(tid, 0.0)
        return {k: round(v, 3) for k, v in kinds.most_common()}

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def _sample(self) -> None:
        names = {t.native_id: t.name for t in threading.enumerate()}
        for tid, cpu in _task_cpu().items():
            name = names.get(tid) or self._seen.get(tid, ("(not Python)", 0.0))[0]
            self._seen[tid] = (re.sub(r"[_-]\d+$", "", name), cpu)


def _task_cpu() -> dict[int, float]:
    cpu = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return {}
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        cpu[int(task)] = (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime
    return cpu
