"""What the heartbeat adds to a relay run, and what one watchdog check costs, side by side in
one run on the local Firestore emulator.

    python bench/bench_watchdog.py [--runs N]

Two relays over the same idle outbox, runs interleaved: one writes its heartbeat after every
run (`RELAY_HEARTBEAT_SECONDS=0`), the other within its interval writes none. The ratio of
their median run times is the heartbeat's share of an idle timer run (the run that matters:
a busy run's heartbeat is the same one write). Then the watchdog: the median time of a steady
check and its billed reads and writes, counted on the wire, once events were delivered in
every partition (a steady deployment: every partition lease document exists). Emulator
figures: a loopback round trip per call, not production latency.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack

from local_outbox import local_outbox, seed

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay import Relay, RelayConfig
from firestore_outbox.testing.metering import meter

LEASE_EVENTS = 200  # events of as many aggregates: every one of the 16 partitions gets some


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="runs of each (default 50)")
    args = parser.parse_args()
    with ExitStack() as stack:
        outbox = local_outbox(stack, "bench-watchdog")
        db, settings, receiver = outbox.db, outbox.settings, outbox.receiver
        host = str(settings.emulator_host)

        def relay(every: float) -> Relay:
            config = RelayConfig(publisher=HttpSettings(url=receiver.url), heartbeat_seconds=every)
            return Relay(db, settings, config)

        beating, quiet = relay(0.0), relay(3600.0)
        beating.run(), quiet.run()  # warm: clients, the lease-mode record, the first beat
        with_beat, without = [], []
        for _ in range(args.runs):
            with_beat.append(timed(beating.run))
            without.append(timed(quiet.run))
        a, b = statistics.median(with_beat), statistics.median(without)
        print(
            f"idle relay run: {a * 1000:.2f} ms with a heartbeat write, {b * 1000:.2f} ms "
            f"without; ratio {a / b:.2f}"
        )

        # A steady deployment's outbox: events delivered in every partition, so that each
        # partition lease document exists (the check reads them all).
        seed(outbox, LEASE_EVENTS)
        while beating.run().processed:
            pass
        leases = len(db.collection("outbox_partitions").get())
        client = get_db_client(settings)
        counts = meter(client)
        environ = {"FIRESTORE_EMULATOR_HOST": host, "FIRESTORE_PROJECT_ID": "bench-watchdog"}
        watchdog = make_watchdog(Configuration.load(environ), client)
        watchdog.check()
        counts.reset()
        checks = [timed(watchdog.check) for _ in range(args.runs)]
        print(
            f"watchdog check: {statistics.median(checks) * 1000:.2f} ms median; "
            f"{counts.billed_reads / args.runs:.1f} billed reads and "
            f"{counts.writes / args.runs:.1f} writes per check ({leases} partition leases)"
        )


if __name__ == "__main__":
    main()
