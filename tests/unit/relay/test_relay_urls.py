"""The relay's URLs (`DOWNSTREAM_SERVICE_URL`, `RELAY_FC_ENDPOINT`): malformed ones refused
naming the variable, never echoing the URL or its secret; well-formed ones kept as given."""

from __future__ import annotations

import pytest

from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.http.settings import HttpSettings
from tests.support.relay_variables import FC


def test_the_url_is_never_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        HttpSettings(url="gopher://user:t0ps3cret@example.com/")
    assert "t0ps3cret" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1/t0ps3cret", "bracketed IPv6 host"),
        ("http://example.com:99999/t0ps3cret", "port"),
        ("http://example.com:0/t0ps3cret", "port"),
        ("http://example.com:8o8o/t0ps3cret", "port"),
        ("http:///t0ps3cret", "host"),
        ("https://user:t0ps3cret@/x", "host"),
        ("ftp://example.com/t0ps3cret", "http:// or https://"),
        ("example.com/t0ps3cret", "http:// or https://"),
        ("http://exa mple.com/t0ps3cret", "spaces or control characters"),
        ("http://example.com/t0ps3cret\r\nX-Evil: 1", "spaces or control characters"),
    ],
)
def test_a_malformed_url_is_refused_naming_the_variable_not_its_secret(
    url: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=f"^DOWNSTREAM_SERVICE_URL .*{problem}") as caught:
        load_relay_config({"DOWNSTREAM_SERVICE_URL": url})
    assert "t0ps3cret" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"^RELAY_FC_ENDPOINT "):
        load_relay_config({**FC, "RELAY_FC_ENDPOINT": url})


def test_well_formed_urls_pass() -> None:
    for url in ("http://[::1]:8080/x", "https://u:p%40ss@example.com/h?sig=a%2fb", "HTTPS://E.COM"):
        assert load_relay_config({"DOWNSTREAM_SERVICE_URL": url}).publisher == HttpSettings(url=url)
