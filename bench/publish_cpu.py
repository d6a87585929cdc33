"""CPU per request of the relay's publish path, in isolation: N POSTs by K threads against
the benchmark's downstream (`bench/downstream.py`, its own process), for each way of sending
in `bench/publish_paths.py`.

    python bench/publish_cpu.py --requests 4000 --threads 16 [--threads 4 ...] [--json OUT]

Per path and thread count it prints the publishing threads' CPU time per request
(`time.thread_time()` summed over the senders: the figure `cpuByThread["relay-publish"]` is in
the relay benchmark) and the whole process's (which adds what the threads cost each other:
switches, the GIL's hand-overs). Each thread sends a few requests first, unmeasured, so every
path is timed on open keep-alive connections. The rounds interleave the paths, and the median
of the rounds is kept, so a burst of load on the machine touches every path alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from publish_paths import PATHS, SenderFactory

WARM_UP = 3


def measure(factory: SenderFactory, requests: int, threads: int) -> dict[str, float]:
    """µs of thread CPU and of process CPU per request, `requests` split over `threads`."""
    per_thread = requests // threads
    cpu = [0.0] * threads
    ready = threading.Barrier(threads + 1)
    failures: list[int] = []

    def work(k: int) -> None:
        send = factory()
        for i in range(WARM_UP):
            send(k * per_thread + i)
        ready.wait()
        started = time.thread_time()
        for i in range(per_thread):
            if send(k * per_thread + i) != 200:
                failures.append(i)
        cpu[k] = time.thread_time() - started

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    ready.wait()
    process, wall = time.process_time(), time.monotonic()
    for worker in workers:
        worker.join()
    process, wall = time.process_time() - process, time.monotonic() - wall
    if failures:
        raise RuntimeError(f"{len(failures)} requests were not answered 200")
    sent = per_thread * threads
    return {
        "threadCpuUs": round(sum(cpu) / sent * 1e6, 1),
        "processCpuUs": round(process / sent * 1e6, 1),
        "perSecond": round(sent / wall),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--threads", type=int, action="append")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--path", action="append", choices=sorted(PATHS))
    parser.add_argument("--json", help="write the figures here as JSON too")
    args = parser.parse_args()
    downstream = subprocess.Popen(
        [sys.executable, os.path.join(os.path.dirname(__file__), "downstream.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert downstream.stdout is not None
    try:
        url = downstream.stdout.readline().strip()
        rounds: dict[tuple[str, int], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for name in args.path or PATHS:
                for threads in args.threads or [16]:
                    figures = measure(PATHS[name](url), args.requests, threads)
                    rounds.setdefault((name, threads), []).append(figures)
    finally:
        downstream.communicate(timeout=60)  # its closing report goes unread
    results = []
    print(f"{'path':34} {'threads':>7} {'thread µs':>10} {'process µs':>11} {'req/s':>7}")
    for (name, threads), runs in rounds.items():
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        results.append({"path": name, "threads": threads, **median, "rounds": runs})
        print(
            f"{name:34} {threads:>7} {median['threadCpuUs']:>10.1f} "
            f"{median['processCpuUs']:>11.1f} {median['perSecond']:>7.0f}"
        )
    print(f"load average: {os.getloadavg()}")
    if args.json:
        with open(args.json, "w") as out:
            when = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
            report = {"date": when, "command": " ".join(sys.argv), "loadAverage": os.getloadavg()}
            json.dump({**report, "results": results}, out, indent=1)


if __name__ == "__main__":
    main()
