"""Name resolution inside an attempt's deadline, against a real local HTTP server (and a real
forward proxy script). Only the resolver is faked: `socket.getaddrinfo` is replaced in this
process by `SlowResolver`, which answers the names a test gives it (after a delay, or never
within the test) and passes every other lookup to the real one. A resolver that hangs must
not hold an attempt, and so a Function Compute invocation, past its deadline."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher
from tests.support.wire_servers import Connection, RawServer, Request, answer, serve_forever

HANGS_FOR = 10.0  # how long a hanging lookup blocks: far past any deadline below


class SlowResolver:
    """A fake `socket.getaddrinfo`: `names[host]` is (delay, address); None hangs. Lookups of
    other names, and of IP literals (`AI_NUMERICHOST`), go to the real resolver."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.names: dict[str, tuple[float, str | None]] = {}
        self.asked: list[str] = []
        self._released = threading.Event()

    def __call__(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        flags = args[3] if len(args) > 3 else kwargs.get("flags", 0)
        if host not in self.names or flags & socket.AI_NUMERICHOST:
            return self._real(host, port, *args, **kwargs)
        self.asked.append(host)
        delay, address = self.names[host]
        if address is None:
            self._released.wait(HANGS_FOR)
            raise socket.gaierror(socket.EAI_AGAIN, "the fake resolver gave up")
        time.sleep(delay)
        return self._real(address, port, *args, **kwargs)

    def release(self) -> None:
        self._released.set()


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowResolver]:
    fake = SlowResolver(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    for name in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield fake
    fake.release()  # lets a worker still blocked in a hanging lookup finish


def _ok(connection: Connection, request: Request) -> None:
    connection.send(answer(200, b"ok"))


def publish(url: str, seconds: float = 1.0) -> tuple[Outcome, str, float]:
    http = HttpPublisher(url, connect_timeout=1.0, read_timeout=2.0)
    started = time.monotonic()
    event = Delivery("e-1", "T", "/s", "o-1", "2026-11-21T08:00:00Z", b"{}", 1, started + seconds)
    result = http.publish(event)
    took = time.monotonic() - started
    http.close()
    return result.outcome, result.error or "", took


def test_a_hanging_name_lookup_ends_the_attempt_by_its_deadline_as_a_channel_failure(
    resolver: SlowResolver,
) -> None:
    resolver.names["hangs.test"] = (0.0, None)
    with RawServer(serve_forever(_ok)) as server:
        outcome, error, took = publish(f"http://hangs.test:{server.port}/events", seconds=1.0)
    assert took < 1.0 + 1.0, f"the attempt took {took:.1f} s"
    assert outcome is Outcome.CHANNEL, error
    assert error.startswith("ConnectionError: DNS") and "deadline" in error, error
    assert server.accepted == 0


def test_a_slow_but_answered_lookup_leaves_the_rest_of_the_deadline_to_deliver(
    resolver: SlowResolver,
) -> None:
    resolver.names["slow.test"] = (0.3, "127.0.0.1")
    with RawServer(serve_forever(_ok)) as server:
        outcome, error, _ = publish(f"http://slow.test:{server.port}/events", seconds=2.0)
    assert (outcome, error) == (Outcome.DELIVERED, "")
    assert resolver.asked == ["slow.test"]


def test_a_real_name_still_resolves_and_delivers(resolver: SlowResolver) -> None:
    with RawServer(serve_forever(_ok)) as server:
        outcome, error, _ = publish(f"http://localhost:{server.port}/events")
    assert (outcome, error) == (Outcome.DELIVERED, "")


def test_an_ip_literal_is_never_looked_up(resolver: SlowResolver) -> None:
    resolver.names["127.0.0.1"] = (0.0, None)  # any lookup of it by name would hang
    with RawServer(serve_forever(_ok)) as server:
        outcome, error, took = publish(server.url)
    assert (outcome, error) == (Outcome.DELIVERED, "") and took < 1.0


def test_through_a_proxy_the_proxys_name_is_the_one_resolved_and_bounded(
    resolver: SlowResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def forward_proxy(connection: Connection, request: Request) -> None:
        seen.append(request.line)
        connection.send(answer(200, b"ok"))

    resolver.names["proxy.test"] = (0.2, "127.0.0.1")
    resolver.names["downstream.test"] = (0.0, None)  # only the proxy may look it up
    with RawServer(serve_forever(forward_proxy)) as proxy:
        monkeypatch.setenv("http_proxy", f"http://proxy.test:{proxy.port}")
        outcome, error, _ = publish("http://downstream.test/events", seconds=2.0)
        assert (outcome, error) == (Outcome.DELIVERED, "")
        assert seen == ["POST http://downstream.test/events HTTP/1.1"]
        assert resolver.asked == ["proxy.test"]

        resolver.names["proxy.test"] = (0.0, None)
        outcome, error, took = publish("http://downstream.test/events", seconds=1.0)
    assert took < 1.0 + 1.0, f"the attempt took {took:.1f} s"
    assert outcome is Outcome.CHANNEL and "DNS" in error and "deadline" in error, error
