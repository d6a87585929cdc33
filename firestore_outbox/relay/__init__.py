"""Running the relay: lease due outbox events, publish them, settle them. No I/O at import.

    from firestore_outbox import Configuration
    from firestore_outbox.relay import Relay

    configuration = Configuration.load()                # the environment, read once
    relay = Relay(db, configuration.settings, configuration.relay())
    summary = relay.run(time_budget=50)

`RelayConfig` can also be built directly (with a publisher's settings from
`firestore_outbox.publishers`, where the `Publisher` interface is too). On Function Compute,
deploy `firestore_outbox.function_compute`'s handler instead of writing one. A process of your
own that runs the relay opts in to what is process-wide, as the `outbox` command does:
`configure_logging(secrets, thread_exceptions=True)` (JSON logs, masked, threads' uncaught
exceptions included) and `route_watch_failures()` (follow mode's listener errors named in its
log).

Where one event's steps live (modules below `firestore_outbox.relay`; partition leases, the
default, first, then per-event leases, `RELAY_LEASES=event`):

    run      core (`Relay.run`): the lease-mode record (partitioned.mode_records), the
             pipeline (per_event.delivering: the publishing pool and the settler)
    claim    partitioned.drain -> partitioned.holdings -> partitioned.claims, written by
             partitioned.lease_documents | none: the event's own lease (below) is its claim
    read     partitioned.page_reads (the queries: partitioned.scan), in order by
             partitioned.aggregates | per_event.drain (`look_for_due`: store's due queries)
    lease    partitioned.head_sender (`take_head`: no write) | per_event.drain (`lease_batch`:
             a conditional write); either way a held_event.Lease (the document read into
             an events.OutboxEvent), planned by transitions
    publish  attempts (deadline, breaker), in the pipeline's pool
    settle   settling.settler (group commits) -> settling.change (one settle, its fields from
             transitions) -> settling.writes (retried, uncertain ones read back) -> store

The names load on first use (PEP 562): importing any module of the relay runs this file
first, and an eager import of the core here would make every module the core imports (the
publishers among them) import the core back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.firestore.outbox_collections import OutboxCollections
    from firestore_outbox.firestore.watch_failures import route_watch_failures
    from firestore_outbox.observability.logs import configure_logging
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.core import Relay
    from firestore_outbox.relay.fan_out import FanOutSettings
    from firestore_outbox.relay.partitioned.settings import PartitionSettings
    from firestore_outbox.relay.ramp import RampSettings
    from firestore_outbox.relay.summary import RunStatus, RunSummary, StopReason

__all__ = [
    "FanOutSettings",
    "OutboxCollections",
    "PartitionSettings",
    "RampSettings",
    "Relay",
    "RelayConfig",
    "RunStatus",
    "RunSummary",
    "StopReason",
    "configure_logging",
    "route_watch_failures",
]

# Names that left this list (for `firestore_outbox.publishers` and the top face), importable
# from here with a DeprecationWarning for one release (docs/upgrading.md).
_MOVED = {
    **{
        name: f"firestore_outbox.publishers.{name}"
        for name in (
            "AccessKeySettings",
            "AmqpSettings",
            "Delivery",
            "EventBridgeSettings",
            "Fc3Settings",
            "FcSettings",
            "HttpSettings",
            "MnsSettings",
            "Outcome",
            "PublishResult",
            "Publisher",
            "RocketMqSettings",
            "keep_rocketmq_out_of_home",
        )
    },
    "Configuration": "firestore_outbox.Configuration",
    "load_relay_config": "firestore_outbox.load_relay_config",
}

__getattr__ = lazy_exports(__name__, _MOVED)
