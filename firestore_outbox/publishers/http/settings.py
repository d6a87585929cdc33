"""The `http` publisher's setting: where to POST (`DOWNSTREAM_SERVICE_URL`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.settings import Get, usable_url


@dataclass(frozen=True, kw_only=True)
class HttpSettings:
    """`downstream_url`: `DOWNSTREAM_SERVICE_URL`, required by `RELAY_PUBLISHER=http`."""

    downstream_url: str | None = None

    def _check_http(self) -> None:
        if self.downstream_url is None:
            raise ConfigError("DOWNSTREAM_SERVICE_URL is not set: the relay has nowhere to deliver")
        usable_url("DOWNSTREAM_SERVICE_URL", self.downstream_url)  # may embed a token: not echoed


def read_http(get: Get) -> dict[str, Any]:
    """`HttpSettings`' fields from the environment."""
    return {"downstream_url": get("DOWNSTREAM_SERVICE_URL")}
