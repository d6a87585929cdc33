"""The nudge's settings: `OUTBOX_NUDGE` (`off`, `fc3`, `http`, `process`),
`OUTBOX_NUDGE_URL` (the `http` target) and `OUTBOX_NUDGE_SECRET` (what `http` nudges are
signed with), read like every other variable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.nudge.sender import NudgeTarget
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.fan_out import FanOutSettings

__all__ = ["NudgeMode", "NudgeSettings", "nudge_secrets"]


class NudgeMode(str, Enum):
    """Where a commit's nudge goes."""

    OFF = "off"
    FC3 = "fc3"  # FC 3.0 async InvokeFunction of the relay function (fan-out's settings)
    HTTP = "http"  # POST to OUTBOX_NUDGE_URL
    PROCESS = "process"  # drain in this process


@dataclass(frozen=True, kw_only=True)
class NudgeSettings:
    """`mode` and, for `http`, `url` and the `secrets` its nudges are signed with (for
    `fc3`, `fan_out`; for `process`, `drain` and its `relay`). The
    sender's bounds: at most `queue_size` nudges waiting (more are dropped and counted),
    `timeout_seconds` per nudge sent, at least `interval_seconds` per token of the sender's
    bucket (a burst of two goes at once, then one nudge per interval, stretched under load:
    what coalesces a busy producer's commits into a few relay invocations)."""

    mode: NudgeMode = NudgeMode.OFF
    url: str | None = None
    # OUTBOX_NUDGE_SECRET (several during a rotation): an `http` nudge is signed with each.
    secrets: tuple[str, ...] = field(default=(), repr=False)
    queue_size: int = 1000
    timeout_seconds: float = 2.0
    interval_seconds: float = 0.1
    # The producer's RELAY_PARTITIONS, sent with each nudge: a relay of another count
    # refuses it (`firestore_outbox.nudge.message.read_nudge`). None: not sent.
    partition_count: int | None = None
    # What the target is built from: `fc3` invokes the function fan-out names, `process`
    # drains with `drain(db, settings)`, a target over a relay of `relay` that the composition
    # root builds (`Configuration.nudge()` fills what the mode needs): the nudge builds no
    # relay itself.
    fan_out: FanOutSettings | None = field(default=None, repr=False)
    relay: RelayConfig | None = field(default=None, repr=False)
    drain: Callable[[Client, Settings], NudgeTarget] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.mode is NudgeMode.HTTP:
            from firestore_outbox.publishers.settings import usable_url  # only for http

            if not self.url:
                raise ConfigError("OUTBOX_NUDGE_URL is required with OUTBOX_NUDGE=http")
            usable_url("OUTBOX_NUDGE_URL", self.url)
            if not self.secrets:
                # The relay behind an HTTP trigger refuses unsigned nudges (anyone can call
                # an anonymous trigger): without a secret every nudge would be refused.
                raise ConfigError(
                    "OUTBOX_NUDGE_SECRET is required with OUTBOX_NUDGE=http (the relay's "
                    "HTTP trigger refuses unsigned nudges)"
                )
        if self.queue_size < 1 or self.timeout_seconds <= 0 or self.interval_seconds < 0:
            raise ConfigError("the nudge's queue, timeout and interval must be positive")

    @classmethod
    def from_environment(cls, get: Get) -> NudgeSettings:
        """`OUTBOX_NUDGE`, `OUTBOX_NUDGE_URL` and `OUTBOX_NUDGE_SECRET` as `get` looks them up
        (`Configuration.nudge()` calls this); `ConfigError` names a bad one."""
        raw = (get("OUTBOX_NUDGE") or "off").lower()
        try:
            mode = NudgeMode(raw)
        except ValueError:
            names = ", ".join(m.value for m in NudgeMode)
            raise ConfigError(f"OUTBOX_NUDGE must be one of {names}, got {raw!r}") from None
        return cls(mode=mode, url=get("OUTBOX_NUDGE_URL"), secrets=nudge_secrets(get))


def nudge_secrets(get: Get) -> tuple[str, ...]:
    """`OUTBOX_NUDGE_SECRET`'s secrets (comma-separated during a rotation), each checked;
    `ConfigError` names the variable, never the value."""
    from firestore_outbox.signing import parse_secrets

    try:
        return parse_secrets(get("OUTBOX_NUDGE_SECRET"))
    except ValueError as exc:
        raise ConfigError(f"OUTBOX_NUDGE_SECRET: {exc}") from None
