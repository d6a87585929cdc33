"""The relay handler's kept-alive connections across invocations: a configuration change
closes the old relay's, but not under a delivery it still has in flight."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from function_compute.relay_handler import handler
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    fc_context,
    use,
)
from tests.support.helpers import add_orders, relay_environment
from tests.support.wire_servers import Connection, RawServer, Request, answer, serve_forever


def test_a_configuration_change_closes_the_old_relays_connections(
    db: firestore.Client,
    settings: Settings,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    accept = serve_forever(lambda connection, _: connection.send(answer(200)))
    with RawServer(accept) as old, RawServer(accept) as new:
        use(monkeypatch, relay_environment(settings, old.url))
        add_orders(db, settings, 1)
        assert handler(TIMER_EVENT, fc_context())["processed"] == 1
        assert old.open_connections == 1  # kept alive for the next invocation

        use(monkeypatch, relay_environment(settings, new.url))
        add_orders(db, settings, 1)
        assert handler(TIMER_EVENT, fc_context())["processed"] == 1
        assert (new.accepted, new.open_connections) == (1, 1)
        assert old.wait_for_open_connections(0) == 0  # closed, not left to the old relay


def test_closing_the_old_relay_does_not_break_a_delivery_it_still_has_in_flight(
    db: firestore.Client,
    settings: Settings,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With instance concurrency an invocation may still run on the old relay: its
    connections are closed when it ends, not under it."""
    asked, answer_now = threading.Event(), threading.Event()

    def held(connection: Connection, _: Request) -> None:
        asked.set()
        answer_now.wait(10)
        connection.send(answer(200))

    accept = serve_forever(lambda connection, _: connection.send(answer(200)))
    slow = {"RELAY_HTTP_TIMEOUT_SECONDS": "5", "RELAY_LOCK_TIMEOUT_SECONDS": "30"}
    with RawServer(serve_forever(held)) as old, RawServer(accept) as new:
        use(monkeypatch, relay_environment(settings, old.url, **slow))
        add_orders(db, settings, 1)
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(handler, TIMER_EVENT, fc_context("req-old"))
            assert asked.wait(10)
            use(monkeypatch, relay_environment(settings, new.url, **slow))
            assert handler(TIMER_EVENT, fc_context("req-new"))["status"] == "ok"
            answer_now.set()
            assert first.result(timeout=20)["processed"] == 1
        assert old.wait_for_open_connections(0) == 0
