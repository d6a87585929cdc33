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
    ─ publish, once the mode records say this run may drain (else: release, drain nothing)

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

from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.relay.partitioned.scan import open_events
from firestore_outbox.relay.partitioned.survey import Held, read_held

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import Found
    from firestore_outbox.relay.partitioned.lease_writes import HeldPartition
    from firestore_outbox.relay.partitioned.leases import PartitionLeases
    from firestore_outbox.relay.store import LeaseStore


@dataclass
class NudgedStart:
    """What the two round trips found: `mode_ok` (the mode records let this run drain),
    the partitions claimed, the first page of each when it is current (`pages`) or the
    partitions to read again (`stale`), and the held aggregates (`held`)."""

    mode_ok: bool = True
    claimed: list[HeldPartition] = field(default_factory=list)
    pages: dict[int, list[Found]] = field(default_factory=dict)
    stale: list[int] = field(default_factory=list)
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
    nudged: bool = True,
    claimed: Callable[[list[HeldPartition]], None],
) -> NudgedStart:
    """Run the two round trips (see the module); `claimed` hears the claim as soon as it
    landed, so that the caller releases it whatever fails after. `nudged`: every named
    lease is read again (else a timer's run goes by what its relay knew)."""
    wanted = sorted(set(partitions))
    with ThreadPoolExecutor(len(wanted) + 3, "relay-nudged") as pool:
        mode = pool.submit(take_mode)
        held: Future[Held] | None = pool.submit(read_held, store) if holds else None
        pages = {
            p: pool.submit(store.run_at, open_events(store, p, page_size, None)) for p in wanted
        }

        def claim() -> list[HeldPartition]:
            leases.read_named(wanted, again=nudged)
            found = [p for p, page in pages.items() if page.result()[0]]
            taken = leases.claim_named(instance, found)
            claimed(taken)
            return taken

        claim_done = pool.submit(claim)
        start = NudgedStart(claimed=claim_done.result())
        start.mode_ok = mode.result()
        for h in start.claimed:
            page, read_at = pages[h.partition].result()
            before = h.claimed_from
            if before is not None and (
                before.created or (read_at is not None and read_at >= before.update_time)
            ):
                start.pages[h.partition] = page
            else:
                start.stale.append(h.partition)
        if held is not None:
            start.held = held.result()
    return start
