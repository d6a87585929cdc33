"""The ways `bench/publish_cpu.py` sends one event: the relay's `HttpPublisher` as it is, the
same with one part taken away at a time, and the clients under it used directly.

Each entry of `PATHS` builds, for one URL, a factory of per-thread senders: a sender takes
the request's number and POSTs one event, answering its status. Every path sends the same
body and the same headers as the relay's (unless it names what it leaves out), so their CPU
per request compares like with like.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from urllib.parse import urlsplit

import pycurl
import urllib3

from firestore_outbox.observability.publish_spans import PublishSpans, record_outcome
from firestore_outbox.publishers.base import Delivery, cloudevent_headers
from firestore_outbox.publishers.http.publisher import USER_AGENT, HttpPublisher, HttpTransport
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


def _urllib3_pool(url: str) -> SenderFactory:
    """urllib3's own pool directly (no PoolManager), its answer preloaded."""
    parts = urlsplit(url)
    pool = urllib3.HTTPConnectionPool(
        parts.hostname, parts.port, maxsize=16, retries=False, timeout=10.0
    )
    fixed = headers(0)

    def send(i: int) -> int:
        response = pool.urlopen("POST", parts.path, body=BODY, headers=fixed, redirect=False)
        return response.status

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


def _easy(url: str) -> pycurl.Curl:
    curl = pycurl.Curl()
    curl.setopt(pycurl.URL, url)
    curl.setopt(pycurl.NOSIGNAL, 1)
    curl.setopt(pycurl.HTTPHEADER, [f"{n}: {v}" for n, v in headers(0).items()] + ["Expect:"])
    curl.setopt(pycurl.TIMEOUT_MS, 15000)
    return curl


def _curl(url: str) -> SenderFactory:
    """pycurl, one easy handle per thread, kept alive: `perform()` and nothing else."""

    def factory() -> Sender:
        curl = _easy(url)

        def send(i: int) -> int:
            curl.setopt(pycurl.POSTFIELDS, BODY)
            curl.setopt(pycurl.WRITEDATA, io.BytesIO())
            curl.perform()
            return int(curl.getinfo(pycurl.RESPONSE_CODE))

        return send

    return factory


def _curl_multi(url: str) -> SenderFactory:
    """pycurl, one multi handle driving every thread's transfers from a thread of its own
    (woken through a pipe when a transfer is handed to it); each sender waits for its own."""
    multi = pycurl.CurlMulti()
    handed: deque[tuple[pycurl.Curl, threading.Event]] = deque()
    running: dict[pycurl.Curl, threading.Event] = {}
    wake_from, wake = os.pipe()
    os.set_blocking(wake_from, False)

    def drive() -> None:
        while True:
            while handed:
                curl, done = handed.popleft()
                multi.add_handle(curl)
                running[curl] = done
            while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
                pass
            while True:
                queued, ok, failed = multi.info_read()
                for curl in [*ok, *(entry[0] for entry in failed)]:
                    multi.remove_handle(curl)
                    running.pop(curl).set()
                if not queued:
                    break
            reading, writing, other = multi.fdset()
            due = multi.timeout()
            select.select([*reading, wake_from], writing, other, None if due < 0 else due / 1000)
            with contextlib.suppress(BlockingIOError):
                os.read(wake_from, 4096)

    threading.Thread(target=drive, daemon=True, name="curl-multi").start()

    def factory() -> Sender:
        curl = _easy(url)

        def send(i: int) -> int:
            curl.setopt(pycurl.POSTFIELDS, BODY)
            curl.setopt(pycurl.WRITEDATA, io.BytesIO())
            done = threading.Event()
            handed.append((curl, done))
            os.write(wake, b"x")
            done.wait()
            return int(curl.getinfo(pycurl.RESPONSE_CODE))

        return send

    return factory


PATHS: dict[str, Callable[[str], SenderFactory]] = {
    "publisher": lambda url: _publisher(url),
    "publisher+signing": lambda url: _publisher(url, signer=Signer([SECRET])),
    "publisher+spans": _with_spans,
    "transport (headers built once)": _transport,
    "urllib3 pool, preload": _urllib3_pool,
    "http.client": _http_client,
    "pycurl easy per thread": _curl,
    "pycurl one multi": _curl_multi,
}
