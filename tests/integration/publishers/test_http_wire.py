"""The HTTP transport against downstreams that break the usual rules (raw local servers):
interim 1xx answers on keep-alive connections, trickled headers and bodies, huge and
compressed bodies. Every attempt ends by its deadline and reads a bounded amount."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget
from firestore_outbox.publishers.http.publisher import HttpPublisher
from tests.support.wire_servers import (
    Connection,
    RawServer,
    Request,
    answer,
    serve_forever,
    trickle,
)


def delivery(event_id: str = "e-1", deadline: float | None = None) -> Delivery:
    return Delivery(event_id, "T", "/s", "o-1", "2026-11-21T08:00:00Z", b"{}", 1, deadline)


def publisher(url: str, read_timeout: float = 2.0, pool_size: int = 4) -> HttpPublisher:
    return HttpPublisher(url, connect_timeout=1.0, read_timeout=read_timeout, pool_size=pool_size)


def _interim_then_final(connection: Connection, request: Request) -> None:
    # Odd events are refused, even ones accepted; each after two interim answers, sent
    # apart so they reach the client as separate packets.
    number = int(request.headers["ce-id"].split("-")[1])
    connection.send(b"HTTP/1.1 102 Processing\r\n\r\n")
    time.sleep(0.01)
    connection.send(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
    time.sleep(0.01)
    connection.send(answer(503 if number % 2 else 200, b"busy" if number % 2 else b"ok"))


def test_interim_answers_are_skipped_and_each_event_gets_its_own_answer() -> None:
    with RawServer(serve_forever(_interim_then_final)) as server:
        http = publisher(server.url)
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda n: http.publish(delivery(f"e-{n}")), range(64)))
        http.close()
    expected = [Outcome.RETRY if n % 2 else Outcome.DELIVERED for n in range(64)]
    wrong = [n for n, r in enumerate(results) if r.outcome is not expected[n]]
    assert wrong == [], [(n, results[n]) for n in wrong[:5]]
    assert {r.error for r in results if r.error} == {"HTTP 503: busy"}
    # The keep-alive connections (one per thread at most) were reused, and stayed in step.
    assert server.accepted <= 8


def test_a_switching_protocols_answer_is_retried_and_its_connection_dropped() -> None:
    def script(connection: Connection, request: Request) -> None:
        if request.headers["ce-id"] == "e-1":
            connection.send(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")
        connection.send(answer(200))

    with RawServer(serve_forever(script)) as server:
        http = publisher(server.url)
        first, second = http.publish(delivery("e-1")), http.publish(delivery("e-2"))
    assert first.outcome is Outcome.RETRY and first.error == "HTTP 101"
    assert second.outcome is Outcome.DELIVERED and server.accepted == 2


def _publish_within_deadline(url: str, seconds: float = 1.5) -> tuple[float, str]:
    started = time.monotonic()
    result = publisher(url, read_timeout=1.0).publish(delivery(deadline=started + seconds))
    took = time.monotonic() - started
    assert result.outcome is Outcome.RETRY and result.error
    return took, result.error


def test_trickled_headers_cannot_stretch_an_attempt_past_its_deadline() -> None:
    headers = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 400 + b"\r\n\r\n"
    with RawServer(lambda c: [c.request(), trickle(c, headers, 0.05, limit=8)]) as server:
        took, error = _publish_within_deadline(server.url)
    assert took < 1.5 + 1.0, f"the attempt took {took:.1f} s"
    assert error.startswith("timeout: deadline")


def _trickled_body(status: int) -> Callable[[Connection], None]:
    """Answer `status` at once, then its 1000-byte body a byte every 50 ms (for 8 s)."""

    def script(connection: Connection) -> None:
        connection.request()
        connection.send(f"HTTP/1.1 {status} Status\r\nContent-Length: 1000\r\n\r\n".encode())
        trickle(connection, b"x" * 1000, 0.05, limit=8)

    return script


def test_a_trickled_body_cannot_stretch_an_attempt_past_its_deadline() -> None:
    with RawServer(_trickled_body(500)) as server:
        took, error = _publish_within_deadline(server.url)
    assert took < 1.5 + 1.0, f"the attempt took {took:.1f} s"
    assert error.startswith("timeout: deadline")


HUGE = 256 * 1024 * 1024


def _huge_answer(status: int) -> Callable[[Connection], None]:
    """Answer `status` with a 256 MiB body, sent as fast as the client reads it."""

    def script(connection: Connection) -> None:
        if connection.request() is None:
            return
        connection.send(f"HTTP/1.1 {status} Big\r\nContent-Length: {HUGE}\r\n\r\n".encode())
        block = b"y" * (1024 * 1024)
        for _ in range(HUGE // len(block)):
            connection.send(block)

    return script


def _bytes_taken(server: RawServer) -> int:
    time.sleep(0.2)  # let the server's last send fail once the client is gone
    return server.bytes_sent


def test_a_huge_answer_is_cut_at_the_cap_and_its_connection_dropped() -> None:
    with RawServer(_huge_answer(503)) as server:
        http = publisher(server.url)
        result = http.publish(delivery())
        http.close()
        sent = _bytes_taken(server)
    assert result.outcome is Outcome.RETRY and result.error == "HTTP 503: " + "y" * 200
    # What the kernel buffers on loopback (a few MB) is all that left the server.
    assert sent < 32 * 1024 * 1024, f"{sent} bytes read of a {HUGE}-byte answer"


def test_without_a_deadline_the_transports_own_bound_ends_the_attempt() -> None:
    headers = b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 400 + b"\r\n\r\n"
    with RawServer(lambda c: [c.request(), trickle(c, headers, 0.05, limit=8)]) as server:
        started = time.monotonic()
        result = publisher(server.url, read_timeout=1.0).publish(delivery())
        took = time.monotonic() - started
    assert took < 1.0 + 1.0 + 1.0, f"the attempt took {took:.1f} s"  # connect + read + slack
    assert (result.error or "").startswith("timeout: deadline")


_MEASURE = """
import json, resource, sys, time
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget
from firestore_outbox.publishers.http.publisher import HttpPublisher
from firestore_outbox.publishers.base import Delivery
http = HttpPublisher(sys.argv[1], connect_timeout=1.0, read_timeout=5.0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
event = Delivery("e-1", "T", "/s", "o", "2026-11-21T08:00:00Z", b"{}", 1, time.monotonic() + 20)
result = http.publish(event)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": result.outcome.value, "error": result.error,
                  "growthKb": after - before}))
"""


def test_a_gzip_bomb_is_never_inflated_beyond_the_cap() -> None:
    inflated = 512 * 1024 * 1024
    bomb = gzip.compress(b"\0" * inflated, compresslevel=9)

    def script(connection: Connection) -> None:
        connection.request()
        headers = (("Content-Encoding", "gzip"), ("Content-Type", "text/plain"))
        connection.send(answer(500, bomb, headers))

    with RawServer(script) as server:
        run = subprocess.run(
            [sys.executable, "-c", _MEASURE, server.url],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    measured = json.loads(run.stdout)
    print(f"gzip bomb: {len(bomb)} bytes inflating to {inflated}: {measured}")
    assert measured["outcome"] == "retry" and measured["error"].startswith("HTTP 500")
    assert measured["growthKb"] < 64 * 1024, f"RSS grew by {measured['growthKb']} KiB"


def test_a_small_error_body_is_read_whole_and_the_connection_reused() -> None:
    body = b"e" * 16384  # well under the cap
    with RawServer(serve_forever(lambda c, _: c.send(answer(503, body)))) as server:
        http = publisher(server.url)
        results = [http.publish(delivery()) for _ in range(5)]
    assert {r.outcome for r in results} == {Outcome.RETRY}
    assert server.accepted == 1


def fc_publisher(server: RawServer, read_timeout: float) -> FcPublisher:
    target = FcTarget(
        endpoint=f"http://127.0.0.1:{server.port}",
        service="s",
        function="f",
        access_key_id="AKID",
        access_key_secret="fc-s3cret-key",
    )
    return FcPublisher(target, connect_timeout=1.0, read_timeout=read_timeout)


def test_the_function_compute_publisher_keeps_the_same_deadline() -> None:
    with RawServer(_trickled_body(202)) as server:
        fc = fc_publisher(server, read_timeout=1.0)
        started = time.monotonic()
        result = fc.publish(delivery(deadline=started + 1.5))
        took = time.monotonic() - started
    assert took < 1.5 + 1.0, f"the attempt took {took:.1f} s"
    assert result.outcome is Outcome.RETRY and (result.error or "").startswith("timeout: deadline")


def test_the_function_compute_publisher_keeps_the_same_cap() -> None:
    with RawServer(_huge_answer(500)) as server:
        result = fc_publisher(server, read_timeout=5.0).publish(delivery())
        sent = _bytes_taken(server)
    assert result.outcome is Outcome.RETRY and (result.error or "").startswith("HTTP 500: yyy")
    assert sent < 32 * 1024 * 1024, f"{sent} bytes read of a {HUGE}-byte answer"
