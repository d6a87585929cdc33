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
default, first, then per-event leases, `RELAY_LEASES=event`). `run` drives; each step is a
folder the event passes once, calling only later steps; what several steps name sits at
the root, below them (`config`, `lease`, `events`, `transitions`, `store`, `pipeline`,
`aggregates`, `healing`, `summary`):

    run      run.relay (`Relay.run`), run.ending (budget, summary), run.mode_records;
             run.partition_drain -> run.page_loop | run.event_drain
    claim    claim.nudged, claim.holdings -> claim.partition_claims, written by
             claim.partition_leases | claim.event_lease (`lease_batch`: a conditional write
             per event, after the read)
    read     read.survey, read.page_reads (the queries: read.scan), queued in order by
             aggregates | read.due (`look_for_due`: store's due queries)
    publish  publish.head_sender (`HeadSender.send`: no write, the partition's lease covers
             it) -> publish.attempts (deadline, breaker), in publish.pool's pool | the same,
             without head_sender; either way the event is a lease.Lease (the document read
             into an events.OutboxEvent), its writes planned by transitions
    settle   settle.settler (group commits) -> settle.change (one settle, its fields from
             transitions) -> settle.writes (retried, uncertain ones read back) -> store

The names load on first use (PEP 562): importing any module of the relay runs this file
first, and an eager import of the core here would make every module the core imports (the
publishers among them) import the core back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import PUBLISHERS_MOVED, lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.firestore.outbox_collections import OutboxCollections
    from firestore_outbox.firestore.watch_failures import route_watch_failures
    from firestore_outbox.observability.logs import configure_logging
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.fan_out import FanOutSettings
    from firestore_outbox.relay.partition_settings import PartitionSettings
    from firestore_outbox.relay.ramp import RampSettings
    from firestore_outbox.relay.run.relay import Relay
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
    **PUBLISHERS_MOVED,
    "keep_rocketmq_out_of_home": "firestore_outbox.publishers.keep_rocketmq_out_of_home",
    "Configuration": "firestore_outbox.Configuration",
    "load_relay_config": "firestore_outbox.load_relay_config",
}

__getattr__ = lazy_exports(__name__, _MOVED)
