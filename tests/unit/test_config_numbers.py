"""Every number variable, whichever loader reads it, says the same about the same mistake.

Before, four parsers differed: `FIRESTORE_TIMEOUT_SECONDS=inf` and `IDEMPOTENCY_TTL_SECONDS=nan`
were refused later with another message (the relay's said "must be a finite number")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.shortcuts import (
    load_idempotency_config,
    load_relay_config,
    load_settings,
)
from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import parse_seconds, parse_whole
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay.config import RelayConfig

Loader = Callable[[Mapping[str, str]], Any]
RELAY = {"DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/events"}

SECONDS: list[tuple[str, Loader]] = [
    ("FIRESTORE_TIMEOUT_SECONDS", load_settings),
    ("IDEMPOTENCY_TTL_SECONDS", load_idempotency_config),
    ("IDEMPOTENCY_LOCK_TIMEOUT_SECONDS", load_idempotency_config),
    ("RELAY_LOCK_TIMEOUT_SECONDS", lambda env: load_relay_config({**RELAY, **env})),
    (
        "RELAY_FIRESTORE_TIMEOUT_SECONDS",
        lambda env: Configuration.load(env).seconds("RELAY_FIRESTORE_TIMEOUT_SECONDS", 1.0),
    ),
]
WHOLE: list[tuple[str, Loader]] = [
    ("RELAY_PARTITIONS", lambda env: Configuration.load(env).partitions().count),
    ("RELAY_PARTITIONS", lambda env: load_relay_config({**RELAY, **env})),
    ("RELAY_BATCH_SIZE", lambda env: load_relay_config({**RELAY, **env})),
]


@pytest.mark.parametrize(("variable", "load"), SECONDS)
@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("soon", "must be a number of seconds"),
        ("inf", "must be a finite number"),
        ("nan", "must be a finite number"),
        # Finite, but a date that far ahead overflows: the relay delivered and never settled.
        ("3e11", "must be at most 3155760000 s (100 years)"),
        ("-3e11", "must be at most 3155760000 s (100 years)"),
    ],
)
def test_seconds_read_by_any_loader_fail_alike(
    variable: str, load: Loader, raw: str, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load({variable: raw})
    assert str(refused.value) == f"{variable} {message}, got {raw!r}"


@pytest.mark.parametrize(("variable", "load"), WHOLE)
@pytest.mark.parametrize("raw", ["two", "2.5"])
def test_whole_numbers_read_by_any_loader_fail_alike(variable: str, load: Loader, raw: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load({variable: raw})
    assert str(refused.value) == f"{variable} must be a whole number, got {raw!r}"


def test_bytes_say_what_they_count() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^IDEMPOTENCY_MAX_REQUEST_BYTES must be a whole number of bytes, got '1.5'$",
    ):
        load_idempotency_config({"IDEMPOTENCY_MAX_REQUEST_BYTES": "1.5"})


def test_what_python_reads_as_a_number_still_reads() -> None:
    assert parse_seconds("X", " 2.5 ") == 2.5
    assert parse_whole("X", "1_000") == 1000


@pytest.mark.parametrize(
    "field",
    ["retention_seconds", "backoff_max_seconds", "lock_timeout_seconds", "time_budget_seconds"],
)
def test_a_relay_config_built_in_code_is_held_to_the_same_ceiling(field: str) -> None:
    with pytest.raises(
        ConfigError, match=r"must be at most 3155760000 s \(100 years\), got 3e\+11"
    ):
        RelayConfig(publisher=HttpSettings(url="http://127.0.0.1:9/events"), **{field: 3e11})
