"""Each publisher's events/s and requests per event, side by side against local endpoints.

    python bench/bench_publishers.py                          # 2000 events, 16 threads, 5 ms
    python bench/bench_publishers.py --events 500 --latency-ms 20

No Firestore: `--events` deliveries are published from a pool of `--concurrency` threads, as
the relay's pool does, through each publisher in turn, against the tests' local endpoints (a
plain HTTP receiver; MNS, EventBridge and RocketMQ servers checking signatures), each answering
after `--latency-ms` (a stand-in for the network). The endpoints run in this process, so the
figures are for comparing the publishers with each other in one run, not absolute rates.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import http.server  # noqa: E402

# The local endpoints (app.receiver under them) write an answer's headers and body in two
# sends; with Nagle's algorithm and the client's delayed ACK every answer with a body then
# stalls ~40 ms, which real services do not. Off here, for every endpoint alike.
http.server.BaseHTTPRequestHandler.disable_nagle_algorithm = True

from app.receiver import Answer, Receiver  # noqa: E402
from app.relay.eventbridge import EventBridgePublisher, EventBridgeTarget  # noqa: E402
from app.relay.http import HttpPublisher  # noqa: E402
from app.relay.mns import MnsPublisher, MnsTarget  # noqa: E402
from app.relay.publishers import Delivery, Outcome  # noqa: E402
from app.relay.rocketmq import RocketMqPublisher, RocketMqTarget  # noqa: E402
from tests import eventbridge_server, mns_server, rocketmq_server  # noqa: E402

Target = Callable[[float], Iterator[tuple[Any, Callable[[], int]]]]


@contextmanager
def http(latency: float) -> Iterator[tuple[Any, Callable[[], int]]]:
    def respond(_: object) -> Answer:
        time.sleep(latency)
        return Answer()

    with Receiver(respond) as receiver:
        publisher = HttpPublisher(receiver.url, connect_timeout=2, read_timeout=5)
        yield publisher, lambda: len(receiver.received)  # one request per event
        publisher.close()


def mns(queue: bool) -> Target:
    @contextmanager
    def run(latency: float) -> Iterator[tuple[Any, Callable[[], int]]]:
        server = mns_server.MnsServer(latency=latency).start()
        target = MnsTarget(
            endpoint=server.endpoint,
            queue="orders" if queue else None,
            topic=None if queue else "orders",
            access_key_id=mns_server.KEY_ID,
            access_key_secret=mns_server.SECRET,
            security_token=mns_server.TOKEN,
        )
        publisher = MnsPublisher(target, connect_timeout=2, read_timeout=5)
        yield publisher, lambda: len(server.requests)
        publisher.close()
        server.stop()

    return run


@contextmanager
def eventbridge(latency: float) -> Iterator[tuple[Any, Callable[[], int]]]:
    server = eventbridge_server.EventBridgeServer(latency=latency).start()
    target = EventBridgeTarget(
        endpoint=server.endpoint,
        bus="orders",
        access_key_id=eventbridge_server.KEY_ID,
        access_key_secret=eventbridge_server.SECRET,
        security_token=eventbridge_server.TOKEN,
    )
    publisher = EventBridgePublisher(target, connect_timeout=2, read_timeout=5)
    yield publisher, lambda: len(server.batches)
    publisher.close()
    server.stop()


@contextmanager
def rocketmq(latency: float) -> Iterator[tuple[Any, Callable[[], int]]]:
    server = rocketmq_server.RocketMqServer(latency=latency).start()
    target = RocketMqTarget(
        endpoints=server.endpoints,
        topic="orders",
        access_key=rocketmq_server.ACCESS_KEY,
        secret_key=rocketmq_server.SECRET_KEY,
    )
    publisher = RocketMqPublisher(target, timeout=5)
    yield publisher, lambda: server.sends
    publisher.close()
    server.stop()


TARGETS: dict[str, Target] = {
    "http": http,
    "mns-queue": mns(queue=True),
    "mns-topic": mns(queue=False),
    "eventbridge": eventbridge,
    "rocketmq": rocketmq,
}


def measure(target: Target, events: int, concurrency: int, latency: float) -> dict[str, Any]:
    deliveries = [
        Delivery(
            f"e-{n}",
            "OrderCreated",
            "/bench",
            f"o-{n % 97}",
            "2026-11-22T00:00:00Z",
            json.dumps({"orderId": f"o-{n}"}).encode(),
            1,
        )
        for n in range(events)
    ]
    with target(latency) as (publisher, requests), ThreadPoolExecutor(concurrency) as pool:
        publisher.publish(deliveries[0])  # warm: connections, the RocketMQ route
        before, start = requests(), time.perf_counter()
        results = list(pool.map(publisher.publish, deliveries))
        elapsed = time.perf_counter() - start
        sent = requests() - before
    delivered = sum(1 for r in results if r.outcome is Outcome.DELIVERED)
    return {
        "delivered": delivered,
        "events_per_s": round(delivered / elapsed),
        "requests_per_event": round(sent / events, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=5.0)
    args = parser.parse_args()
    print(f"{args.events} events, {args.concurrency} threads, {args.latency_ms} ms per answer")
    print(f"{'publisher':<12} {'delivered':>9} {'events/s':>9} {'requests/event':>15}")
    for name, target in TARGETS.items():
        row = measure(target, args.events, args.concurrency, args.latency_ms / 1000)
        print(
            f"{name:<12} {row['delivered']:>9} {row['events_per_s']:>9} "
            f"{row['requests_per_event']:>15}"
        )


if __name__ == "__main__":
    main()
