"""`load_relay_config`: the defaults, every variable read, bad values refused naming their
variable, signing secrets never shown; `read_seconds` alone."""

from __future__ import annotations

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.partition_settings import PartitionSettings
from tests.support.relay_variables import URL


def test_defaults_need_only_the_downstream_url() -> None:
    config = load_relay_config({"DOWNSTREAM_SERVICE_URL": URL})
    assert config == RelayConfig(publisher=HttpSettings(url=URL))
    assert (config.max_attempts, config.lock_timeout_seconds) == (5, 300.0)
    assert config.lock_timeout_seconds >= 2 * config.attempt_seconds


def test_every_variable_is_read() -> None:
    config = load_relay_config(
        {
            "DOWNSTREAM_SERVICE_URL": URL,
            "RELAY_MAX_ATTEMPTS": "7",
            "RELAY_LOCK_TIMEOUT_SECONDS": "120",
            "RELAY_BACKOFF_BASE_SECONDS": "0.5",
            "RELAY_BACKOFF_MAX_SECONDS": "60",
            "RELAY_BATCH_SIZE": "250",
            "RELAY_CONCURRENCY": "32",
            "RELAY_TIME_BUDGET_SECONDS": "240",
            "RELAY_HTTP_TIMEOUT_SECONDS": "3",
            "RELAY_FIRESTORE_TIMEOUT_SECONDS": "4",
            "RELAY_EVENT_SOURCE": "/shop/orders",
            "OUTBOX_RETENTION_SECONDS": "86400",
        }
    )
    assert config == RelayConfig(
        publisher=HttpSettings(url=URL),
        max_attempts=7,
        lock_timeout_seconds=120,
        backoff_base_seconds=0.5,
        backoff_max_seconds=60,
        batch_size=250,
        concurrency=32,
        time_budget_seconds=240,
        http_timeout_seconds=3,
        firestore_timeout_seconds=4,
        event_source="/shop/orders",
        retention_seconds=86400,
    )


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({}, "DOWNSTREAM_SERVICE_URL is not set"),
        ({"DOWNSTREAM_SERVICE_URL": "ftp://example.com/x"}, "DOWNSTREAM_SERVICE_URL must be"),
        ({"DOWNSTREAM_SERVICE_URL": "https:///nohost"}, "DOWNSTREAM_SERVICE_URL must be"),
        ({"RELAY_MAX_ATTEMPTS": "five"}, "RELAY_MAX_ATTEMPTS must be a whole number, got 'five'"),
        ({"RELAY_MAX_ATTEMPTS": "0"}, "RELAY_MAX_ATTEMPTS must be a whole number >= 1"),
        ({"RELAY_BATCH_SIZE": "501"}, "RELAY_BATCH_SIZE must be at most 500"),
        ({"RELAY_CONCURRENCY": "2.5"}, "RELAY_CONCURRENCY must be a whole number"),
        ({"RELAY_BACKOFF_BASE_SECONDS": "-1"}, "RELAY_BACKOFF_BASE_SECONDS must be greater than 0"),
        ({"RELAY_BACKOFF_MAX_SECONDS": "1"}, "RELAY_BACKOFF_MAX_SECONDS must be at least"),
        ({"RELAY_TIME_BUDGET_SECONDS": "nan"}, "RELAY_TIME_BUDGET_SECONDS must be a finite number"),
        ({"RELAY_LOCK_TIMEOUT_SECONDS": "20"}, "RELAY_LOCK_TIMEOUT_SECONDS must be at least twice"),
        ({"OUTBOX_RETENTION_SECONDS": "-1"}, "OUTBOX_RETENTION_SECONDS must be at least 0"),
        ({"RELAY_EVENT_SOURCE": " "}, None),  # blank means unset, like every variable
    ],
)
def test_bad_values_name_their_variable(variables: dict[str, str], message: str | None) -> None:
    environ = {"DOWNSTREAM_SERVICE_URL": URL, **variables} if variables else {}
    if message is None:
        assert load_relay_config(environ).event_source is None
        return
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as caught:
        load_relay_config(environ)
    assert "t0ps3cret" not in str(caught.value)


def test_read_seconds_reads_one_variable_without_the_rest() -> None:
    assert Configuration.load({}).seconds("RELAY_LOCK_TIMEOUT_SECONDS", 300.0) == 300.0
    assert (
        Configuration.load({"RELAY_LOCK_TIMEOUT_SECONDS": "60"}).seconds(
            "RELAY_LOCK_TIMEOUT_SECONDS", 300.0
        )
        == 60
    )
    with pytest.raises(ConfigError, match="OUTBOX_RETENTION_SECONDS must be at least 0"):
        Configuration.load({"OUTBOX_RETENTION_SECONDS": "-5"}).seconds(
            "OUTBOX_RETENTION_SECONDS", 1.0
        )
    with pytest.raises(ConfigError, match="OUTBOX_RETENTION_SECONDS must be a number"):
        Configuration.load({"OUTBOX_RETENTION_SECONDS": "7d"}).seconds(
            "OUTBOX_RETENTION_SECONDS", 1.0
        )


def test_signing_secrets_are_read_checked_and_never_shown() -> None:
    secret, previous = "whsec-n3w-0123456789", "whsec-0ld-0123456789"
    config = load_relay_config({"DOWNSTREAM_SERVICE_URL": URL})
    assert config.signing_secrets == ()
    config = load_relay_config(
        {"DOWNSTREAM_SERVICE_URL": URL, "RELAY_SIGNING_SECRET": f"{secret}, {previous}"}
    )
    assert config.signing_secrets == (secret, previous)
    assert secret not in repr(config) and previous not in repr(config)
    with pytest.raises(ConfigError, match="RELAY_SIGNING_SECRET: each secret must be") as caught:
        load_relay_config({"DOWNSTREAM_SERVICE_URL": URL, "RELAY_SIGNING_SECRET": "sh0rt"})
    assert "sh0rt" not in str(caught.value)


def test_per_event_leases_refuse_an_explicit_aggregate_ordering_and_order_nothing() -> None:
    event = {"DOWNSTREAM_SERVICE_URL": URL, "RELAY_LEASES": "event"}
    with pytest.raises(ConfigError, match="RELAY_ORDERING=aggregate needs partition leases"):
        load_relay_config({**event, "RELAY_ORDERING": "Aggregate"})
    with pytest.raises(ConfigError, match="RELAY_ORDERING=aggregate needs partition leases"):
        PartitionSettings(leases="event", ordering="aggregate")  # type: ignore[arg-type]
    # The default ordering is the leases' own: none with per-event leases.
    assert not load_relay_config(event).partitions.ordered
    assert not load_relay_config({**event, "RELAY_ORDERING": "none"}).partitions.ordered
    assert load_relay_config({"DOWNSTREAM_SERVICE_URL": URL}).partitions.ordered
    assert load_relay_config(
        {"DOWNSTREAM_SERVICE_URL": URL, "RELAY_ORDERING": "aggregate"}
    ).partitions.ordered
    assert not load_relay_config(
        {"DOWNSTREAM_SERVICE_URL": URL, "RELAY_ORDERING": "none"}
    ).partitions.ordered


def test_a_budget_shorter_than_one_attempt_is_refused_naming_the_variables() -> None:
    with pytest.raises(ConfigError) as refused:
        load_relay_config({"DOWNSTREAM_SERVICE_URL": URL, "RELAY_TIME_BUDGET_SECONDS": "9"})
    message = str(refused.value)
    assert "RELAY_TIME_BUDGET_SECONDS (9) must fit one attempt: at least 15.5 s" in message
    assert "RELAY_HTTP_TIMEOUT_SECONDS 10 s" in message
    shorter = {"RELAY_TIME_BUDGET_SECONDS": "9", "RELAY_HTTP_TIMEOUT_SECONDS": "4"}
    assert load_relay_config({"DOWNSTREAM_SERVICE_URL": URL, **shorter}).attempt_seconds == 8.5
