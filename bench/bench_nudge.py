"""The fast path, side by side: commit-to-delivery latency (the commit returned -> the
downstream received the event) of a steady stream of commits, every Firestore round trip made
+40 ms longer by the delaying proxy, for each way of delivering:

- `timer`: only the Function Compute timer (an invocation every `--timer-seconds`);
- `fc3`: a nudge per commit through FC 3.0's async invoke (a local server that checks the
  signature and runs each invocation on an idle warm instance, or starts a new one: a cold
  start, counted), and the timer;
- `fc3-dropped`: every nudge refused (100% dropped): the timer alone must deliver all;
- `process`: a nudge per commit drained in the committing process, and the timer;
- `follow`: `outbox relay --follow` in a process of its own.

Each commit is one event on one of 20 aggregates (a sequence number in its payload): the
downstream checks that none is lost and none overtakes another of its aggregate.

    python bench/bench_nudge.py            # 10 and 100/s, 60 s each: results/nudge.json
    python bench/bench_nudge.py --rates 10 --seconds 5 --timer-seconds 10  # a quick look
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
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import bootstrap  # noqa: F401  (the reference application, from this checkout)
import nudge_trace
from latency_proxy import DelayProxy
from nudge_function import RelayFunction, report, timer_event
from nudge_plot import write_plot

from app.uow import FirestoreUnitOfWork
from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.shortcuts import nudger_for
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import partition_of
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator

HERE = Path(__file__).resolve().parent
PROJECT = "bench-nudge"
AGGREGATES = 20
MODES = ("timer", "fc3", "fc3-dropped", "process", "follow")


class Downstream:
    """Records when each event arrived and checks each aggregate's sequence."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.next: dict[str, int] = defaultdict(int)
        self.out_of_order = 0
        self._lock = threading.Lock()

    def __call__(self, request: Received) -> ReceiverAnswer:
        now = time.monotonic()
        body = request.json()
        with self._lock:
            if request.event_id not in self.arrived:
                self.arrived[str(request.event_id)] = now
                aggregate, seq = body["aggregate"], body["seq"]
                self.out_of_order += seq != self.next[aggregate]
                self.next[aggregate] = max(self.next[aggregate], seq + 1)
        return ReceiverAnswer(200)


def run_mode(mode: str, rate: float, args: argparse.Namespace) -> dict[str, Any]:
    # An emulator per mode: after a long run the emulator's listeners slowed to a stop.
    with FirestoreEmulator() as emulator:
        return _run_mode(mode, rate, args, emulator.host_port)


def _run_mode(mode: str, rate: float, args: argparse.Namespace, emulator: str) -> dict[str, Any]:
    reset_emulator(emulator, PROJECT)
    downstream = Downstream()
    with (
        DelayProxy(*_split(emulator), args.delay_ms / 1000) as proxy,
        Receiver(downstream) as receiver,
    ):
        settings = Settings(project_id=PROJECT, emulator_host=proxy.host_port)
        env = {
            **os.environ,
            "FIRESTORE_EMULATOR_HOST": proxy.host_port,
            "FIRESTORE_PROJECT_ID": PROJECT,
            "DOWNSTREAM_SERVICE_URL": receiver.url,
            "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "WARNING"),
            "OUTBOX_NUDGE": {"timer": "off", "follow": "off"}.get(mode, mode.split("-")[0]),
        }
        if args.trace:
            env["BENCH_NUDGE_TRACE"] = _trace_dir(args, mode, rate)
        function = RelayFunction(
            env, refuse_nudges=mode == "fc3-dropped", max_instances=args.max_instances
        )
        with Receiver(function) as fc:
            env.update(function.caller_environment(fc.url))
            function.start(timer_event())  # one instance warm, the leases made
            function.wait()
            function.warm(args.instances)
            function.invocations = function.cold_starts = 0
            function.durations.clear()
            try:
                return _stream(mode, rate, args, settings, env, function, downstream)
            finally:
                function.close()


def _stream(
    mode: str,
    rate: float,
    args: argparse.Namespace,
    settings: Settings,
    env: dict[str, str],
    function: RelayFunction,
    downstream: Downstream,
) -> dict[str, Any]:
    db = get_db_client(settings)
    nudger = nudger_for(db, settings, env) if env["OUTBOX_NUDGE"] != "off" else None
    if nudger is not None and args.trace:
        _trace_nudges(nudger, function)
    partitions = Configuration.load(env).partitions().count
    where: dict[str, tuple[float, int]] = {}
    follower = None
    if mode == "follow":
        outbox = Path(sys.executable).with_name("outbox")
        follower = subprocess.Popen([str(outbox), "relay", "--follow"], env=env)
        time.sleep(3.0)  # its listener's first snapshot
    events = round(rate * args.seconds)
    committed: dict[str, float] = {}
    commit_ms: list[float] = []
    locks = [threading.Lock() for _ in range(AGGREGATES)]
    seqs = [0] * AGGREGATES
    stop = threading.Event()
    ticks = [0]

    def timer() -> None:  # the timer trigger, as Function Compute fires it
        while not stop.wait(args.timer_seconds):
            ticks[0] += 1
            function.start(timer_event())

    def commit(n: int) -> None:
        time.sleep(max(0.0, started + n / rate - time.monotonic()))
        a = n % AGGREGATES
        with locks[a]:  # one aggregate's commits in sequence order
            event = {"eventType": "OrderPlaced", "aggregateType": "customer"}
            payload = {"aggregate": f"customer-{a}", "seq": seqs[a]}
            began = time.monotonic()
            with FirestoreUnitOfWork(db, settings, nudger=nudger or False) as uow:
                event_id = uow.outbox.add(
                    {**event, "aggregateId": payload["aggregate"], "payload": payload}
                )
            done = time.monotonic()
            seqs[a] += 1
        committed[event_id] = done
        where[event_id] = (done, partition_of(payload["aggregate"], partitions))
        commit_ms.append((done - began) * 1000)

    if mode != "follow":
        threading.Thread(target=timer, daemon=True).start()
    started = time.monotonic()
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(commit, range(events)))
    produced_in = time.monotonic() - started
    deadline = time.monotonic() + args.timer_seconds * 2 + 30
    while len(downstream.arrived) < events and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    function.wait()
    if follower is not None:
        follower.terminate()
        try:
            follower.wait(30)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait(30)
    counts = dict(nudger.counts) if nudger is not None else {}
    if nudger is not None:
        nudger.close()
    latencies = sorted(
        (downstream.arrived[e] - t) * 1000 for e, t in committed.items() if e in downstream.arrived
    )
    cuts = (
        statistics.quantiles(latencies, n=100, method="inclusive")
        if len(latencies) > 1
        else [0.0] * 99
    )
    result = {
        "mode": mode,
        "rate": rate,
        "events": events,
        "achievedRate": round(events / produced_in, 1),
        "delivered": len(latencies),
        "lost": events - len(latencies),
        "outOfOrder": downstream.out_of_order,
        "p50": round(statistics.median(latencies), 1) if latencies else None,
        "p95": round(cuts[94], 1),
        "p99": round(cuts[98], 1),
        "max": round(latencies[-1], 1) if latencies else None,
        "commitP50": round(statistics.median(commit_ms), 1),
        "commitP99": round(statistics.quantiles(commit_ms, n=100)[98], 1),
        "timerInvocations": ticks[0],
        "nudgeInvocations": function.nudges,
        "extraInvocationsPerEvent": round(function.nudges / events, 3),
        "nudger": counts,
        "function": report(function),
        "latenciesMs": [round(x, 1) for x in latencies],
    }
    if args.trace:
        result["trace"] = nudge_trace.account(env["BENCH_NUDGE_TRACE"], where, downstream.arrived)
        print(json.dumps(result["trace"], indent=1), flush=True)
    print(
        f"  {mode:12} {rate:>5g}/s: p50 {result['p50']} ms  p95 {result['p95']}  p99 "
        f"{result['p99']}  lost {result['lost']}  out of order {result['outOfOrder']}  "
        f"extra invocations/event {result['extraInvocationsPerEvent']}  "
        f"commit p50 {result['commitP50']} ms  cold starts {function.cold_starts}",
        flush=True,
    )
    db.close()
    return result


def _trace_dir(args: argparse.Namespace, mode: str, rate: float) -> str:
    directory = Path(args.trace) / f"{mode}-{rate:g}"
    for old in directory.glob("*.jsonl"):
        old.unlink()
    nudge_trace.install(str(directory), "bench")
    return str(directory)


def _trace_nudges(nudger: Any, function: RelayFunction) -> None:
    """Mark each nudge sent. In `process` mode a nudge only hands its partitions to the
    drains' pool (`firestore_outbox.nudge.process`), whose runs overlap and use pools of their
    own: their stages are not attributed to a nudge (only commit to delivery is measured)."""
    target = nudger._target
    send = target.send

    def traced(partitions: frozenset[int]) -> bool:
        started = time.monotonic()
        try:
            return send(partitions)
        finally:
            request = None if env_mode == "process" else function.last_nudge
            nudge_trace.mark(
                "nudge-sent", start=started, partitions=sorted(partitions), request=request
            )

    env_mode = "process" if type(target).__name__ == "ProcessNudge" else "fc3"
    target.send = traced


def _split(host_port: str) -> tuple[str, int]:
    host, _, port = host_port.rpartition(":")
    return host, int(port)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", default="10,100")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--timer-seconds", type=float, default=60.0)
    parser.add_argument(
        "--delay-ms", type=float, default=20.0, help="each way: +40 ms a round trip"
    )
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--instances", type=int, default=4, help="relay instances kept warm (FC's minimum)"
    )
    parser.add_argument(
        "--max-instances", type=int, default=8, help="the relay function's instance limit"
    )
    parser.add_argument(
        "--trace",
        default="",
        help="a directory: mark every stage of each nudged delivery, and account for them",
    )
    parser.add_argument("--out", default=str(HERE / "results" / "nudge.json"))
    parser.add_argument(
        "--plot", default=str(HERE.parent / "docs" / "images" / "nudge-latency.svg")
    )
    args = parser.parse_args()
    results = []
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    for rate in (float(r) for r in args.rates.split(",")):
        for mode in args.modes.split(","):
            results.append(run_mode(mode, rate, args))
            # Written after every mode: a run cut short keeps what it measured.
            Path(args.out).write_text(
                json.dumps({"args": vars(args), "results": results}, indent=1)
            )
            write_plot(results, Path(args.plot))
    print(f"wrote {args.out} and {args.plot}")


if __name__ == "__main__":
    main()
