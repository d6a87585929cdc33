"""The ways `bench/publish_cpu.py` sends one event: the relay's `HttpPublisher` as it is, the
same with one part taken away at a time, and the clients under it used directly.

Each entry of `PATHS` builds, for one URL, a factory of per-thread senders: a sender takes
the request's number and POSTs one event, answering its status. Every path sends the same
body and the same headers as the relay's (unless it names what it leaves out), so their CPU
per request compares like with like.
"""

from __future__ import annotations

import http.client
import importlib.util
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import urllib3

from firestore_outbox.observability.tracing import PublishSpans, record_outcome
from firestore_outbox.publishers.base import Delivery, cloudevent_headers
from firestore_outbox.publishers.http.answers import read_answer
from firestore_outbox.publishers.http.publisher import USER_AGENT, HttpPublisher, HttpTransport
from firestore_outbox.publishers.http.wire import POOL_CLASSES, attempt_deadline
from firestore_outbox.signing import Signer

Sender = Callable[[int], int]
SenderFactory = Callable[[], Sender]  # called once per thread

BODY = b'{"orderId": "o-1234", "customerId": "c-42", "items": [{"productId": "p", "quantity": 2}]}'
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # a made-up test key
TIMEOUTS = {"connect_timeout": 5.0, "read_timeout": 10.0}


def delivery(i: int) -> Delivery:
    return Delivery(
        event_id=f"evt-{i:08d}",
        event_type="OrderCreated",
        source="/firestore-outbox/bench",
        subject=f"order-{i % 997}",
        time="2026-11-22T12:00:00.000000Z",
        body=BODY,
        attempt=1,
        deadline=time.monotonic() + 15,
        traceparent=TRACEPARENT,
    )


def headers(i: int) -> dict[str, str]:
    return {"User-Agent": USER_AGENT, **cloudevent_headers(delivery(i))}


def _publisher(url: str, **options: object) -> SenderFactory:
    publisher = HttpPublisher(url, **TIMEOUTS, **options)  # type: ignore[arg-type]

    def factory() -> Sender:
        return lambda i: 200 if publisher.publish(delivery(i)).error is None else 0

    return factory


def _with_spans(url: str) -> SenderFactory:
    """The publisher inside the relay's per-attempt telemetry hooks (no SDK installed: what
    the benchmark's relay runs)."""
    publisher = HttpPublisher(url, **TIMEOUTS)  # type: ignore[arg-type]
    spans = PublishSpans("http", "bench")

    def send(i: int) -> int:
        with spans.span(f"evt-{i}", {"traceparent": TRACEPARENT}, 1) as (span, _):
            result = publisher.publish(delivery(i))
            record_outcome(span, result.outcome.value, None)
        return 200 if result.error is None else 0

    return lambda: send


def _transport(url: str) -> SenderFactory:
    """Our transport with the headers built once: no CloudEvent header building."""
    transport = HttpTransport(**TIMEOUTS)
    fixed = headers(0)

    def send(i: int) -> int:
        return 200 if transport.post(url, BODY, fixed).error is None else 0

    return lambda: send


def _pool(url: str, *, deadline: bool, preload: bool) -> SenderFactory:
    """urllib3 directly: our deadline pool (`deadline`) or urllib3's own, no PoolManager."""
    parts = urlsplit(url)
    cls = POOL_CLASSES["http"] if deadline else urllib3.HTTPConnectionPool
    pool = cls(parts.hostname, parts.port, maxsize=16, retries=False, timeout=10.0)
    fixed = headers(0)

    def send(i: int) -> int:
        with attempt_deadline(time.monotonic() + 15):
            response = pool.urlopen(
                "POST", parts.path, body=BODY, headers=fixed, redirect=False,
                preload_content=preload, decode_content=False,
            )  # fmt: skip
            if preload:
                return response.status
            return read_answer(response).status

    return lambda: send


def _http_client(url: str) -> SenderFactory:
    """Plain http.client, one kept-alive connection per thread."""
    parts = urlsplit(url)
    fixed = headers(0)

    def factory() -> Sender:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)

        def send(i: int) -> int:
            connection.request("POST", parts.path, BODY, fixed)
            response = connection.getresponse()
            response.read()
            return response.status

        return send

    return factory


def _curl(url: str) -> SenderFactory:
    """pycurl (if installed): one easy handle per thread, kept alive."""
    import io

    import pycurl

    header_lines = [f"{name}: {value}" for name, value in headers(0).items()]

    def factory() -> Sender:
        curl = pycurl.Curl()
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.HTTPHEADER, [*header_lines, "Expect:"])
        curl.setopt(pycurl.TIMEOUT_MS, 15000)

        def send(i: int) -> int:
            answer = io.BytesIO()
            curl.setopt(pycurl.POSTFIELDS, BODY)
            curl.setopt(pycurl.WRITEDATA, answer)
            curl.perform()
            return int(curl.getinfo(pycurl.RESPONSE_CODE))

        return send

    return factory


def _deadline_connection(url: str) -> SenderFactory:
    """Our deadline connection, one per thread, driven through http.client's own API (no
    urllib3 pool, no urllib3 response)."""
    parts = urlsplit(url)
    fixed = headers(0)
    connection_class = POOL_CLASSES["http"].ConnectionCls

    def factory() -> Sender:
        connection = connection_class(parts.hostname or "", parts.port, timeout=10.0)

        def send(i: int) -> int:
            with attempt_deadline(time.monotonic() + 15):
                http.client.HTTPConnection.request(connection, "POST", parts.path, BODY, fixed)
                response = http.client.HTTPConnection.getresponse(connection)
                response.read(65537)
            return response.status

        return send

    return factory


PATHS: dict[str, Callable[[str], SenderFactory]] = {
    "publisher": lambda url: _publisher(url),
    "publisher+signing": lambda url: _publisher(url, signer=Signer([SECRET])),
    "publisher+spans": _with_spans,
    "transport (headers built once)": _transport,
    "deadline pool, read_answer": lambda url: _pool(url, deadline=True, preload=False),
    "urllib3 pool, preload": lambda url: _pool(url, deadline=False, preload=True),
    "http.client": _http_client,
    "deadline connection, http.client API": _deadline_connection,
}
if importlib.util.find_spec("pycurl") is not None:  # the `bench` extra installs it
    PATHS["pycurl easy"] = _curl
