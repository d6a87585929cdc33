"""A downstream for the benchmark, in its own process so it never competes with the relay
for the GIL: `firestore_outbox.consumer.receiver.Receiver` answering 200 after `--latency-ms`.

    python bench/downstream.py --latency-ms 10

Prints its URL on the first line, serves until its stdin closes, then prints one JSON line:
`{"deliveries": n, "distinct": n, "latenciesMs": [...]}`, where a latency runs from the
event's `ce-time` (its commit time) to its arrival.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer


def _latency_ms(request: Received, arrived: float) -> float | None:
    stamp = request.headers.get("ce-time")
    if not stamp:
        return None
    committed = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    return (arrived - committed) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    delay = args.latency_ms / 1000
    latencies: list[float] = []

    def respond(request: Received) -> ReceiverAnswer:
        latency = _latency_ms(request, time.time())
        if latency is not None:
            latencies.append(latency)  # list.append is atomic; handlers run on many threads
        if delay:
            time.sleep(delay)
        return ReceiverAnswer(200)

    with Receiver(respond) as receiver:
        print(receiver.url, flush=True)
        sys.stdin.read()  # the benchmark closes our stdin when it is done
        received = receiver.received
    print(
        json.dumps(
            {
                "deliveries": len(received),
                "distinct": len({r.event_id or r.body for r in received}),
                "latenciesMs": [round(x, 2) for x in latencies],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
