"""What the publishers' settings share: the Alibaba Cloud AccessKey, and the checks that name
the variable that is missing or wrong without ever echoing a URL (it may hold a token) or a
secret.

Each publisher family keeps its fields, their variables and their checks in a settings
dataclass of its own (`firestore_outbox.publishers.http.settings`, `fc_settings`,
`message_settings`,
`amqp_settings`); `RelayConfig` inherits them all, so a setting keeps its one flat name
(`config.mns_queue`) and `RelayConfig(...)` takes every one as a keyword.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.http.urls import url_problem

# A lookup of one environment variable (`firestore_outbox.config.settings.env_reader`): stripped,
# None when unset.
Get = Callable[[str], "str | None"]


@dataclass(frozen=True, kw_only=True)
class AccessKeySettings:
    """The AccessKey that signs requests to Alibaba Cloud: `ALIBABA_CLOUD_ACCESS_KEY_ID`,
    `..._SECRET`, `..._SECURITY_TOKEN` (which Function Compute sets for a function that has a
    role)."""

    access_key_id: str | None = None
    access_key_secret: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)

    def _access_key(self) -> tuple[tuple[str, str | None], ...]:
        """The AccessKey's required variables and their values, for `required`."""
        return (
            ("ALIBABA_CLOUD_ACCESS_KEY_ID", self.access_key_id),
            ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", self.access_key_secret),
        )


def read_access_key(get: Get) -> dict[str, Any]:
    """`AccessKeySettings`' fields from the environment."""
    return {
        "access_key_id": get("ALIBABA_CLOUD_ACCESS_KEY_ID"),
        "access_key_secret": get("ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
        "security_token": get("ALIBABA_CLOUD_SECURITY_TOKEN"),
    }


def required(needed_by: str, *variables: tuple[str, str | None]) -> None:
    """`ConfigError` naming the first of `variables` that is not set."""
    for variable, value in variables:
        if not value:
            raise ConfigError(f"{variable} is not set: {needed_by} needs it")


def usable_url(variable: str, url: str) -> None:
    """`ConfigError` naming `variable` unless `url` is a usable http:// or https:// URL. The
    message names the problem, never the URL: its path, query or user info may hold a token."""
    problem = url_problem(url)
    if problem:
        raise ConfigError(f"{variable} must be a usable http:// or https:// URL: {problem}")


def flag(variable: str, value: str | None) -> bool:
    """A true/false variable (unset: false); `ConfigError` naming it for anything else."""
    if value is None or value.lower() in ("false", "0", "no"):
        return False
    if value.lower() in ("true", "1", "yes"):
        return True
    raise ConfigError(f"{variable} must be true or false, got {value!r}")


def at_least(variable: str, value: int, minimum: int) -> None:
    """`ConfigError` naming `variable` unless `value` is a whole number >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{variable} must be a whole number >= {minimum}, got {value!r}")


# A field's variable and its parser (`firestore_outbox.config.numbers`), by field name.
NumberTable = dict[str, tuple[str, Callable[[str, str], float]]]


def read_numbers(get: Get, table: NumberTable) -> dict[str, Any]:
    """The fields of `table` (field: its variable and parser) whose variable is set."""
    numbers: dict[str, Any] = {}
    for name, (variable, parse) in table.items():
        raw = get(variable)
        if raw is not None:
            numbers[name] = parse(variable, raw)
    return numbers
