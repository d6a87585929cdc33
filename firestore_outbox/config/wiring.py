"""Wiring: every object an entry point runs, built from one `Configuration`.

The Function Compute handlers, the `outbox` commands and the demo call these instead of
putting the parts together themselves; each part receives its settings as arguments.

    build_relay(configuration)              # the Relay, its publisher and Firestore client
    backlog(relay, configuration)           # what the backlog gauges read
    nudge_or_why(configuration)             # the nudge's settings, or why there are none
    hand_off(relay, configuration)          # the nudger a nudged run hands what it found to
    build_redrive(configuration, db)        # the re-drive jobs' runner
    make_watchdog(configuration)            # the watchdog, every call bounded
    build_front_door(configuration, make)   # an HTTP app behind the Idempotency-Key door
    build_responder(configuration, make)    # a receiver's responder (your consumer)
    process_drain(relay_config)             # what OUTBOX_NUDGE=process drains with
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from firestore_outbox.errors import OutboxError
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.deadline import with_deadline

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.config.loader import Configuration
    from firestore_outbox.consumer.receiver_settings import ReceiverConfig
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.health.watchdog import Watchdog
    from firestore_outbox.idempotency.config import IdempotencyConfig
    from firestore_outbox.nudge import Nudger, NudgeSettings
    from firestore_outbox.nudge.process import ProcessNudge
    from firestore_outbox.redrive.service import Redrive
    from firestore_outbox.relay import Relay, RelayConfig

__all__ = [
    "ProcessDrain",
    "backlog",
    "build_front_door",
    "build_redrive",
    "build_relay",
    "build_responder",
    "hand_off",
    "make_watchdog",
    "nudge_or_why",
]

Backlog = Callable[[], tuple[dict[str, int], float | None]]
Built = TypeVar("Built")


def build_relay(configuration: Configuration, db: Client | None = None) -> Relay:
    """The relay of `configuration` on `db` (default: a new client for its settings);
    `ConfigError` names a bad variable. Close it (or use it as a context manager)."""
    from firestore_outbox.relay import Relay  # the relay's core: only for those that run it

    settings = configuration.settings
    return Relay(db or get_db_client(settings), settings, configuration.relay())


def backlog(relay: Relay, configuration: Configuration) -> Backlog:
    """What the backlog gauges read for `relay`'s outbox (one reading within the Firestore
    deadline)."""
    from firestore_outbox.ops.status import backlog_reader

    settings, config = configuration.settings, relay.config
    return backlog_reader(
        relay.db,
        settings.outbox_collection,
        partitions=config.partitions.count,
        lock_timeout_seconds=config.lock_timeout_seconds,
        timeout=settings.firestore_timeout_seconds,
    )


def nudge_or_why(configuration: Configuration) -> NudgeSettings | str:
    """The nudge's settings, or the problem with them (what needs them then nudges nothing)."""
    try:
        return configuration.nudge()
    except OutboxError as exc:
        return str(exc)


def hand_off(relay: Relay, configuration: Configuration) -> Nudger | None:
    """The nudger a nudged run hands the partitions its re-check found to, when
    `OUTBOX_NUDGE` nudges another invocation (`fc3`, `http`); None otherwise."""
    from firestore_outbox.nudge import hand_off_for

    return hand_off_for(relay.db, configuration.settings, nudge_or_why(configuration))


def build_redrive(configuration: Configuration, db: Client) -> Redrive:
    """The re-drive jobs' runner (docs/redrive.md) on `db`, with the relay's settings (it
    publishes as the relay does)."""
    from firestore_outbox.redrive.service import Redrive

    return Redrive(db, configuration.settings, configuration.relay())


def make_watchdog(configuration: Configuration, db: Client | None = None) -> Watchdog:
    """A `Watchdog` over `configuration`'s outbox; `db` (default: a new client) gets every
    call bounded by `WATCHDOG_TIMEOUT_SECONDS`. It needs no downstream: only the outbox, its
    partitions and lease timeout, and the `WATCHDOG_*` variables. `ConfigError` names a bad
    variable."""
    from firestore_outbox.health.watchdog import Watchdog

    watchdog = configuration.watchdog()
    settings = configuration.settings
    client = with_deadline(db or get_db_client(settings), watchdog.timeout_seconds)
    return Watchdog(
        client,
        settings,
        watchdog,
        partitions=configuration.partitions().count,
        collections=configuration.collections,
        lock_timeout_seconds=configuration.seconds("RELAY_LOCK_TIMEOUT_SECONDS", 300.0),
    )


def build_front_door(
    configuration: Configuration,
    make_app: Callable[[Client, Settings, IdempotencyConfig], Built],
) -> Built:
    """The HTTP app `make_app(db, settings, idempotency_config)` builds (the order API, or a
    team's app behind the Idempotency-Key front door), on a new client."""
    settings = configuration.settings
    return make_app(get_db_client(settings), settings, configuration.idempotency())


def build_responder(
    configuration: Configuration,
    make_responder: Callable[[Client, ReceiverConfig], Built],
    *,
    verify_signatures: bool = True,
) -> Built:
    """A receiver's responder, `make_responder(db, receiver_config)` (your consumer), on a new
    client."""
    receiver = configuration.receiver(verify_signatures=verify_signatures)
    return make_responder(get_db_client(configuration.settings), receiver)


@dataclass(frozen=True)
class ProcessDrain:
    """`OUTBOX_NUDGE=process`'s target: drains the nudged partitions in this process with a
    relay of `config` (`NudgeSettings.drain`). A value, so that two reads of one
    configuration share one nudger."""

    config: RelayConfig

    def __call__(self, db: Client, settings: Settings) -> ProcessNudge:
        from firestore_outbox.nudge.process import ProcessNudge
        from firestore_outbox.relay import Relay

        return ProcessNudge(Relay(db, settings, self.config))
