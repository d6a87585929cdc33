"""What every publisher's settings share: the base class, the Alibaba Cloud AccessKey, and the
checks that name the variable that is missing or wrong without ever echoing a URL (it may hold
a token) or a secret.

Each publisher owns a small keyword-only settings class in its folder
(`firestore_outbox.publishers.http.settings`, `...fc.settings`, `...mns.settings`, ...): its
fields, how it reads them from the environment (`from_environment`), and its checks, run when
it is made. `RelayConfig.publisher` holds one of them, and the publisher is built from that
one alone (`firestore_outbox.publishers.registry`).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import ClassVar

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get
from firestore_outbox.publishers.http.urls import url_problem


@dataclass(frozen=True, kw_only=True)
class PublisherSettings:
    """Base of each publisher's settings: `name` is its `RELAY_PUBLISHER` value."""

    name: ClassVar[str]

    @classmethod
    def from_environment(cls, get: Get) -> PublisherSettings:
        """The settings from the environment; `ConfigError` names a variable missing or bad."""
        raise NotImplementedError

    def destination(self) -> str:
        """`messaging.destination.name` of what it publishes to (a queue, topic, bus, function;
        never a secret)."""
        return ""

    def secrets(self) -> tuple[str, ...]:
        """Values that must never reach a log or `lastError` (a token in a URL, a key)."""
        return ()


@dataclass(frozen=True, kw_only=True)
class AccessKeySettings:
    """The AccessKey that signs requests to Alibaba Cloud: `ALIBABA_CLOUD_ACCESS_KEY_ID`,
    `..._SECRET`, `..._SECURITY_TOKEN` (which Function Compute sets for a function that has a
    role)."""

    access_key_id: str = ""
    access_key_secret: str = field(default="", repr=False)
    security_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, get: Get) -> AccessKeySettings:
        return cls(
            access_key_id=get("ALIBABA_CLOUD_ACCESS_KEY_ID") or "",
            access_key_secret=get("ALIBABA_CLOUD_ACCESS_KEY_SECRET") or "",
            security_token=get("ALIBABA_CLOUD_SECURITY_TOKEN"),
        )

    def required(self) -> tuple[tuple[str, str | None], ...]:
        """The AccessKey's required variables and their values, for `required`."""
        return (
            ("ALIBABA_CLOUD_ACCESS_KEY_ID", self.access_key_id),
            ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", self.access_key_secret),
        )

    def secrets(self) -> tuple[str, ...]:
        return (self.access_key_secret, self.security_token or "")


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


def port_problem(port: str) -> str | None:
    """Why `port` (its digits as written) is no TCP port to connect to, or None: a number
    from 1 to 65535. Clients differ past that range (librdkafka wraps `85536` to 20000)."""
    if not port.isascii() or not port.isdigit():
        return "the port is not a number"
    if not 0 < int(port) < 65536:
        return "the port is not from 1 to 65535"
    return None


def pem_certificates(variable: str, path: str) -> None:
    """`ConfigError` naming `variable` unless the file at `path` can be read and holds PEM
    certificates (what OpenSSL, under libcurl, librdkafka and Python's `ssl`, loads as CA
    certificates): found now, not by each connection the publisher tries."""
    try:
        ssl.create_default_context(cafile=path)
    except FileNotFoundError:
        raise ConfigError(f"{variable} is not a readable file: {path}") from None
    except ssl.SSLError as exc:  # before OSError: it is one
        raise ConfigError(
            f"{variable} must hold PEM certificates: {path} does not ({exc.reason or exc})"
        ) from None
    except (OSError, ValueError) as exc:  # a folder, no permission
        raise ConfigError(f"{variable} is not a readable file: {path} ({exc})") from None
