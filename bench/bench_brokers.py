"""Publisher throughput side by side: events/s of the http, fc3 and amqp publishers against
local endpoints, in one run, on the same machine.

    python bench/bench_brokers.py                     # 2,000 events per publisher, 16 threads
    python bench/bench_brokers.py --events 200 --concurrency 4

Each publisher gets the same deliveries from a pool of `--concurrency` threads, as the relay
publishes them (no Firestore here: the publisher alone). Endpoints: the HTTP downstream and
the local Function Compute 3.0 InvokeFunction server (`tests/fc3_server.py`, which verifies
every signature) run in a child process each, so their CPU is not the publishers'; AMQP goes
to a RabbitMQ node of its own (Debian's rabbitmq-server, `tests/rabbitmq.py`), a durable queue
with persistent messages and publisher confirms. Each publisher is warmed first (connections
opened), then timed over `--repeats` runs; the table gives the median and the ratio to http.
Loopback figures: they compare the publishers' own costs, not a cloud's latency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `tests.*` for the local endpoints

from app.receiver import Answer, Receiver  # noqa: E402
from app.relay.amqp import AmqpPublisher, AmqpTarget  # noqa: E402
from app.relay.fc3 import Fc3Publisher, Fc3Target  # noqa: E402
from app.relay.http import HttpPublisher  # noqa: E402
from app.relay.publishers import Delivery, Outcome, Publisher  # noqa: E402

KEY_ID, KEY_SECRET, FUNCTION = "AKID", "bench-s3cret", "on-order-created"


def serve(kind: str) -> None:
    """Child process: an endpoint on a free port; prints its URL, serves until stdin closes."""
    from tests.fc3_server import Fc3Endpoint

    if kind == "fc3":
        responder: Any = Fc3Endpoint(keys={KEY_ID: KEY_SECRET}, functions={FUNCTION})
    else:
        responder = lambda _request: Answer(204)  # noqa: E731
    with Receiver(responder, keep=False) as receiver:
        print(receiver.url.removesuffix("/events") if kind == "fc3" else receiver.url, flush=True)
        sys.stdin.read()


@contextmanager
def endpoint(kind: str) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process.stdout.readline().strip()
    finally:
        process.stdin.close()
        process.wait(10)


@contextmanager
def rabbitmq_queue() -> Iterator[str | None]:
    """A broker URL whose default exchange routes `bench` to a durable queue; None when
    rabbitmq-server is not installed."""
    import pika

    from tests.rabbitmq import server_command, started

    command = server_command()
    if command is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="bench-rabbitmq-") as directory:
        broker = started(command, Path(directory))
        try:
            with pika.BlockingConnection(broker.parameters()) as connection:
                connection.channel().queue_declare("bench", durable=True)
            yield broker.url
        finally:
            broker.stop()


def deliveries(count: int, tag: str) -> list[Delivery]:
    body = b'{"orderId":"o-1","items":[{"productId":"sku-1","quantity":1}]}'
    return [
        Delivery(f"{tag}-{n}", "OrderCreated", "/bench", f"o-{n}", "2026-11-22T00:00:00Z", body, 1)
        for n in range(count)
    ]


def events_per_second(publisher: Publisher, batch: list[Delivery], concurrency: int) -> float:
    with ThreadPoolExecutor(concurrency) as pool:
        started = time.perf_counter()
        results = list(pool.map(publisher.publish, batch))
        elapsed = time.perf_counter() - started
    failed = [r for r in results if r.outcome is not Outcome.DELIVERED]
    if failed:
        raise RuntimeError(f"{len(failed)} deliveries failed, e.g. {failed[0]}")
    return len(batch) / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "publishers")
    parser.add_argument("--serve", choices=("http", "fc3"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    timeouts = {"connect_timeout": 5.0, "read_timeout": 10.0, "pool_size": args.concurrency}
    rates: dict[str, list[float]] = {}
    with ExitStack() as stack:
        publishers: dict[str, Any] = {
            "http": HttpPublisher(stack.enter_context(endpoint("http")), **timeouts),
            "fc3": Fc3Publisher(
                Fc3Target(
                    endpoint=stack.enter_context(endpoint("fc3")),
                    function=FUNCTION,
                    access_key_id=KEY_ID,
                    access_key_secret=KEY_SECRET,
                ),
                **timeouts,
            ),
        }
        amqp_url = stack.enter_context(rabbitmq_queue())
        if amqp_url is not None:
            publishers["amqp"] = AmqpPublisher(
                AmqpTarget(url=amqp_url, routing_key="bench"), **timeouts
            )
        for name, publisher in publishers.items():
            events_per_second(
                publisher, deliveries(args.concurrency * 4, f"warm-{name}"), args.concurrency
            )
        for repeat in range(args.repeats):  # interleaved, so drift hits every publisher alike
            for name, publisher in publishers.items():
                batch = deliveries(args.events, f"{name}-{repeat}")
                rates.setdefault(name, []).append(
                    events_per_second(publisher, batch, args.concurrency)
                )
        for publisher in publishers.values():
            publisher.close()
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{args.events} events per run, {args.concurrency} threads, {args.repeats} runs")
    print(f"{'publisher':<10} {'events/s':>10} {'vs http':>8}")
    for name, rate in medians.items():
        print(f"{name:<10} {rate:>10.0f} {rate / medians['http']:>8.2f}")
    if amqp_url is None:
        print("amqp: skipped, rabbitmq-server is not installed")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {"events": args.events, "concurrency": args.concurrency, "rates": rates}
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
