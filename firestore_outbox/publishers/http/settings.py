"""The `http` publisher's setting: where to POST (`DOWNSTREAM_SERVICE_URL`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get
from firestore_outbox.publishers.http.urls import url_secrets
from firestore_outbox.publishers.settings import PublisherSettings, usable_url


@dataclass(frozen=True, kw_only=True)
class HttpSettings(PublisherSettings):
    """`url`: `DOWNSTREAM_SERVICE_URL`, an http:// or https:// URL (it may carry a token in
    its path or query, or user info: it is never echoed)."""

    name: ClassVar[str] = "http"
    url: str = field(repr=False)

    def __post_init__(self) -> None:
        usable_url("DOWNSTREAM_SERVICE_URL", self.url)

    @classmethod
    def from_environment(cls, get: Get) -> HttpSettings:
        url = get("DOWNSTREAM_SERVICE_URL")
        if url is None:
            raise ConfigError("DOWNSTREAM_SERVICE_URL is not set: the relay has nowhere to deliver")
        return cls(url=url)

    def destination(self) -> str:
        """The downstream's host and port only: a path or query may hold a token, and user
        info a password."""
        parts = urlsplit(self.url)
        return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname or "")

    def secrets(self) -> tuple[str, ...]:
        return tuple(url_secrets(self.url))
