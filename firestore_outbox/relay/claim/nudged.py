"""The start of a run over partitions it can name: two round trips to its first publish,
where reading and claiming one after the other takes five (held aggregates, mode record, mode
records read, lease read, claim, page) before it publishes anything.

A nudged run (`Relay.run(partitions=...)`) names the nudge's; a timer's run, after its survey,
a few of those the survey saw events in (without the ramp, and with nothing to heal: else it
claims the slow way). Either asks Firestore everything at once:

    round trip 1: its mode record written  ║ the named partitions' leases read (a timer's
                  run: those it knows nothing of) ║ their first pages read ║ the held
                  aggregates read (failed heads held)
    round trip 2: the live mode records read ║ a claim of those with an open event, free
                  (a timer's run: of those it named, without waiting for their pages)
    ─ publish, once the mode records say this run may drain (else: release, drain nothing),
      from each page as it comes in

A nudged run does nothing optional: no survey, no healing, no counts, no fan-out (the
timer's runs do those). A partition whose first page came back empty is not claimed: the
nudged event was committed before the nudge was sent, so before that read; an event committed
later brings a nudge of its own (and a timer's run claims the slow way what it has not
visited).

A page read before the claim is the partition's truth when it was read no earlier than the
lease's last change (the update time the claim was conditional on): the last holder settled
everything it read before it released, and the claim proves nobody held the partition from
that release to the claim. So is any page of a partition whose lease this relay has just
created (nobody ever held it). A page read earlier is dropped and read again after the claim
(a round trip more, rare). A lease held by another invocation is left to it: its re-check
before release (`recheck`) finds the nudged event.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.relay.read.scan import open_events
from firestore_outbox.relay.read.survey import Held, read_held

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.claim.partition_claims import PartitionLeases
    from firestore_outbox.relay.claim.partition_leases import ClaimedPartition
    from firestore_outbox.relay.store import LeaseStore
    from firestore_outbox.relay.summary import Tally


@dataclass
class NudgedStart:
    """What the two round trips found: `mode_ok` (the mode records let this run drain),
    the partitions claimed, the first page of each (`pages`: in flight maybe; None when it
    may be older than the claim shows, to read again), and the held aggregates (`held`)."""

    mode_ok: bool = True
    claimed: list[ClaimedPartition] = field(default_factory=list)
    pages: dict[int, Future[list[Found] | None]] = field(default_factory=dict)
    held: Held = field(default_factory=Held)


def start_nudged(
    store: LeaseStore,
    leases: PartitionLeases,
    partitions: Collection[int],
    *,
    instance: str,
    page_size: int,
    take_mode: Callable[[], bool],
    holds: bool,
    reader: ThreadPoolExecutor,
    nudged: bool = True,
    into: dict[int, ClaimedPartition],
    until: float,
    tally: Tally,
) -> NudgedStart:
    """Run the two round trips (see the module), the page queries on `reader` (the drain's
    pool: they may still be in flight when this returns); `into` gets the claim as soon
    as it landed, so that the caller releases it whatever fails after.

    `nudged`: those named leases this relay knows free are claimed at once, beside a read of
    every one; the others (and those refused) only where their page found an open event
    (`PartitionLeases.claim_nudged`). Else (a timer's run, naming partitions its survey saw
    events in) the run goes by the leases its relay knew and claims without waiting for the
    pages: the drain publishes from the first page in, not the slowest. The held-events
    read is sent again while the budget (`until`) lasts, its retries counted in `tally`."""
    wanted = sorted(set(partitions))
    pages = {p: reader.submit(store.run_at, open_events(store, p, page_size, None)) for p in wanted}
    with ThreadPoolExecutor(4, "relay-start") as pool:
        mode = pool.submit(take_mode)
        held: Future[Held] | None = (
            pool.submit(read_held, store, until=until, tally=tally) if holds else None
        )

        def claim() -> list[ClaimedPartition]:
            if nudged:
                return leases.claim_nudged(
                    instance,
                    wanted,
                    beside=pool,
                    with_events=lambda named: [p for p in named if _may_have_events(pages[p])],
                    into=into,
                )
            leases.read_named(wanted, again=False)
            taken = leases.claim_named(instance, wanted)
            into.update((h.partition, h) for h in taken)
            return taken

        claim_done = pool.submit(claim)
        start = NudgedStart(claimed=claim_done.result())
        start.mode_ok = mode.result()
        start.pages = {h.partition: _checked(pages[h.partition], h) for h in start.claimed}
        if held is not None:
            start.held = held.result()
    return start


def _may_have_events(page: Future[tuple[list[Found], datetime.datetime | None]]) -> bool:
    """Whether a first page found an open event, or could not tell (its read failed: the
    partition is claimed, and the drain reads it again, `PageReads`)."""
    if page.exception() is not None:
        return True
    return bool(page.result()[0])


def _checked(
    read: Future[tuple[list[Found], datetime.datetime | None]], claimed: ClaimedPartition
) -> Future[list[Found] | None]:
    """`read`'s page once it is in, if it is the partition's truth for `claimed`'s claim (see
    the module); else None (read it again)."""
    page: Future[list[Found] | None] = Future()

    def arrived(done: Future[tuple[list[Found], datetime.datetime | None]]) -> None:
        try:
            docs, read_at = done.result()
        except BaseException as exc:  # the drain raises it where it takes the page
            page.set_exception(exc)
            return
        before = claimed.claimed_from
        current = before is not None and (
            before.created or (read_at is not None and read_at >= before.update_time)
        )
        page.set_result(docs if current else None)

    read.add_done_callback(arrived)
    return page
