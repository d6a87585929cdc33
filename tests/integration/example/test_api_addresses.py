"""`outbox api`'s server on a host name that resolves to more than one address (`localhost`
is 127.0.0.1 and ::1 on many machines): waitress then listens on each, and the server reports
every address instead of failing at start-up. Real sockets; only the name's resolution is
played, as this machine's `localhost` has one address."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import waitress.adjustments

from firestore_outbox.errors import ConfigError
from firestore_outbox.idempotency.server import ApiServer, create_server

DUAL = "dual-stack.test"


def hello(_: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"hello"]


@pytest.fixture
def dual_stack_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """`DUAL` resolves to both loopbacks, as `localhost` does on many machines."""
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *rest: Any) -> Any:
        if host != DUAL:
            return real(host, port, *rest)
        return real("127.0.0.1", port, *rest) + real("::1", port, *rest)

    monkeypatch.setattr(waitress.adjustments.socket, "getaddrinfo", resolve)


@pytest.fixture
def serving(dual_stack_name: None) -> Iterator[ApiServer]:
    server = create_server(hello, DUAL, 0, 2)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.close()
        thread.join(10)


def test_a_name_with_two_addresses_is_served_on_both_and_each_is_reported(
    serving: ApiServer,
) -> None:
    hosts = [host for host, _ in serving.addresses]
    assert sorted(hosts) == ["127.0.0.1", "::1"]
    assert serving.effective_port == serving.addresses[0][1]
    urls = serving.urls()
    assert len(urls) == 2 and any(url.startswith("http://[::1]:") for url in urls)
    for url in urls:
        answer = requests.get(f"{url}/healthz", timeout=5)
        assert (answer.status_code, answer.text) == (200, "hello")


def test_a_host_that_resolves_to_nothing_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"cannot listen on no-such-host\.invalid:0: no address"):
        create_server(hello, "no-such-host.invalid", 0, 1)
