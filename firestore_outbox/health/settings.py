"""The watchdog's settings: its thresholds, where it sends alerts, and its own budget.

Thresholds are the points past which `assess` (`firestore_outbox.health.assess`) calls the
relay unwell; the console's health panel uses the same ones, so both say the same thing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import (
    Get,
    NumberTable,
    check_seconds,
    parse_seconds,
    parse_whole,
    read_numbers,
)

__all__ = ["Thresholds", "WatchdogSettings", "WebhookFormat"]


class WebhookFormat(str, enum.Enum):
    """The alert webhook's body: a generic JSON document, or a DingTalk or Lark (Feishu)
    custom robot's message, signed as each robot's signing option asks."""

    JSON = "json"
    DINGTALK = "dingtalk"
    LARK = "lark"


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """`stale_seconds`: no heartbeat for this long, the relay has stopped; `pending_age_seconds`:
    the oldest due event has waited this long; `failed_growth`: this many events became FAILED
    within `window_seconds`; `stuck_seconds`: a lease held this long past its expiry."""

    stale_seconds: float = 300.0
    pending_age_seconds: float = 600.0
    failed_growth: int = 1
    window_seconds: float = 900.0
    stuck_seconds: float = 60.0

    def __post_init__(self) -> None:
        for name, (variable, parse) in THRESHOLDS.items():
            if parse is parse_seconds:
                check_seconds(variable, getattr(self, name))
                if getattr(self, name) < 0:
                    raise ConfigError(f"{variable} must be at least 0, got {getattr(self, name)}")
        if self.failed_growth < 1:
            raise ConfigError(
                f"WATCHDOG_FAILED_GROWTH must be at least 1, got {self.failed_growth}"
            )

    @classmethod
    def from_environment(cls, get: Get) -> Thresholds:
        return cls(**read_numbers(get, THRESHOLDS))


THRESHOLDS: NumberTable = {
    "stale_seconds": ("WATCHDOG_STALE_SECONDS", parse_seconds),
    "pending_age_seconds": ("WATCHDOG_PENDING_AGE_SECONDS", parse_seconds),
    "failed_growth": ("WATCHDOG_FAILED_GROWTH", parse_whole),
    "window_seconds": ("WATCHDOG_WINDOW_SECONDS", parse_seconds),
    "stuck_seconds": ("WATCHDOG_STUCK_SECONDS", parse_seconds),
}


@dataclass(frozen=True, kw_only=True)
class WatchdogSettings:
    """The thresholds; the webhook (`webhook_url`, None: logs and metrics only; its `format`;
    `webhook_secret`, the robot's signing secret); `timeout_seconds`, the budget of each of the
    check's Firestore reads and of the webhook's POST; `collection`, where the heartbeats and
    the watchdog's incident record live (None: `{OUTBOX_COLLECTION}_health`, see
    `firestore_outbox.firestore.outbox_collections`)."""

    thresholds: Thresholds = Thresholds()
    webhook_url: str | None = None
    webhook_format: WebhookFormat = WebhookFormat.JSON
    webhook_secret: str | None = None
    timeout_seconds: float = 5.0
    collection: str | None = None

    def __post_init__(self) -> None:
        if self.webhook_url is not None:
            from firestore_outbox.publishers.settings import usable_url

            usable_url("WATCHDOG_WEBHOOK_URL", self.webhook_url)
        check_seconds("WATCHDOG_TIMEOUT_SECONDS", self.timeout_seconds)
        if not self.timeout_seconds > 0:
            raise ConfigError("WATCHDOG_TIMEOUT_SECONDS must be more than 0")

    @classmethod
    def from_environment(cls, get: Get) -> WatchdogSettings:
        """The `WATCHDOG_*` variables and `OUTBOX_HEALTH_COLLECTION` (`ConfigError` names one)."""
        raw = (get("WATCHDOG_WEBHOOK_FORMAT") or "json").lower()
        try:
            kind = WebhookFormat(raw)
        except ValueError:
            names = ", ".join(f.value for f in WebhookFormat)
            raise ConfigError(
                f"WATCHDOG_WEBHOOK_FORMAT must be one of {names}, got {raw!r}"
            ) from None
        timeout = get("WATCHDOG_TIMEOUT_SECONDS")
        return cls(
            thresholds=Thresholds.from_environment(get),
            webhook_url=get("WATCHDOG_WEBHOOK_URL"),
            webhook_format=kind,
            webhook_secret=get("WATCHDOG_WEBHOOK_SECRET"),
            timeout_seconds=5.0
            if timeout is None
            else parse_seconds("WATCHDOG_TIMEOUT_SECONDS", timeout),
            collection=get("OUTBOX_HEALTH_COLLECTION"),
        )
