"""The console's access checks and its chart, without a server."""

from __future__ import annotations

import pytest

from firestore_outbox.console.access import Guard, check_binding, is_loopback, read_token
from firestore_outbox.console.chart import History, Sample, backlog_chart
from firestore_outbox.errors import ConfigError

TOKEN = "t" * 20


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"])
def test_loopback_names_and_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "console.example", ""])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_beyond_loopback_needs_a_token() -> None:
    check_binding([("127.0.0.1", 8081), ("::1", 8081)], None)
    with pytest.raises(ConfigError, match="OUTBOX_CONSOLE_TOKEN"):
        check_binding([("0.0.0.0", 8081)], None)
    check_binding([("0.0.0.0", 8081)], TOKEN)


def test_a_short_token_is_refused_and_never_echoed() -> None:
    with pytest.raises(ConfigError) as refused:
        read_token({"OUTBOX_CONSOLE_TOKEN": "short-secret"}.get)
    assert "short-secret" not in str(refused.value)
    assert read_token({}.get) is None


def test_the_token_is_asked_of_every_request_when_set() -> None:
    guard = Guard(TOKEN)
    assert not guard.signed_in({})
    assert not guard.signed_in({"HTTP_AUTHORIZATION": "Bearer " + "t" * 19})
    assert guard.signed_in({"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"})
    assert guard.signed_in({"HTTP_COOKIE": f"outbox_console={TOKEN}"})
    assert not guard.signed_in({"HTTP_COOKIE": "outbox_console=nope; other=1"})
    assert guard.host_allowed({"HTTP_HOST": "console.example:8081"})


def test_without_a_token_only_loopback_hosts_are_answered() -> None:
    guard = Guard(None)
    assert guard.signed_in({})
    assert guard.host_allowed({"HTTP_HOST": "127.0.0.1:8081"})
    assert guard.host_allowed({"HTTP_HOST": "[::1]:8081"})
    assert not guard.host_allowed({"HTTP_HOST": "rebound.example:8081"})
    assert not guard.host_allowed({})


def test_a_post_needs_the_csrf_token_and_this_origin() -> None:
    guard = Guard(None)
    here = {"HTTP_HOST": "127.0.0.1:8081"}
    assert guard.post_allowed(here, {"csrf": [guard.csrf]})
    assert guard.post_allowed(
        {**here, "HTTP_ORIGIN": "http://127.0.0.1:8081"}, {"csrf": [guard.csrf]}
    )
    assert not guard.post_allowed(here, {})
    assert not guard.post_allowed(here, {"csrf": [Guard(None).csrf]})
    assert not guard.post_allowed({**here, "HTTP_ORIGIN": "null"}, {"csrf": [guard.csrf]})


def test_the_chart_draws_once_it_has_two_readings_since_the_page_opened() -> None:
    history = History(size=3)
    history.add(Sample(1.0, {"PENDING": 1}, None))
    assert "<svg" not in backlog_chart(history.since(0))
    for at in (2.0, 3.0, 4.0):
        history.add(Sample(at, {"PENDING": 2, "FAILED": 1}, 7.5))
    samples = history.since(0)
    assert [s.at for s in samples] == [2.0, 3.0, 4.0]  # bounded: the oldest went
    svg = backlog_chart(samples)
    assert svg.count("<polyline") == 4 and 'data-series="FAILED"' in svg
    assert history.since(3.5) == samples[-1:]
