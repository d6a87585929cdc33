"""The console's pages, each a reading through the operations layer (`firestore_outbox.ops`),
the same functions `outbox status`, `outbox requeue --dry-run`, `outbox inspect` and
`outbox held` call. Each returns (HTTP status, HTML)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from firestore_outbox.console.chart import Sample, backlog_chart, recent_chart
from firestore_outbox.console.context import LIST_LIMIT, Context
from firestore_outbox.console.health import health_panel, partitions_summary
from firestore_outbox.fields import AGGREGATE_ID, HELD, PAYLOAD, STATUS, EventStatus
from firestore_outbox.health.assess import judge
from firestore_outbox.numbers import human
from firestore_outbox.ops import event_document, plan_requeue
from firestore_outbox.ops.held import HeldAggregate, list_held
from firestore_outbox.ops.history import read_recent, recent_points
from firestore_outbox.ops.overview import read_overview
from firestore_outbox.ops.requeue import listed
from firestore_outbox.redrive.job import FINAL

Query = Mapping[str, list[str]]
# Re-drive jobs the overview reads, newest first, to show those under way.
JOBS_READ = 10
PageAnswer = tuple[int, str]


def one(query: Query, name: str) -> str | None:
    """The first value of `name` in `query`, stripped; None when absent or blank."""
    values = query.get(name) or [""]
    return values[0].strip() or None


def overview(ctx: Context, query: Query) -> PageAnswer:
    opened = f"{time.time():.3f}"
    live_region = live(ctx, {"since": [opened]})[1]
    body = (
        f'<div id=live data-src="/live?since={opened}" data-every="{ctx.refresh_seconds:g}">'
        f"{live_region}</div>"
    )
    return 200, ctx.html.page("Overview", body)


def live(ctx: Context, query: Query) -> PageAnswer:
    """The overview's live region, read again on every refresh: the relay's health first
    (as the watchdog judges it), then the backlog, its history, the partitions, held
    aggregates."""
    h = ctx.html
    reading, health = judge(ctx.db, ctx.watched, ctx.thresholds, timeout=ctx.timeout)
    now = reading.now
    overview = read_overview(
        ctx.db, ctx.collection, partitions=ctx.partitions, now=now, timeout=ctx.timeout
    )
    pending = overview.counts.get(EventStatus.PENDING.value, 0)
    recent = ctx.recent.get(
        lambda: read_recent(
            ctx.db, ctx.collection, partitions=ctx.partitions, now=now, timeout=ctx.timeout
        )
    )
    # The newest jobs (one small query): those not done or cancelled are under way.
    under_way = [job for job in ctx.job_store().recent(JOBS_READ) if job.state not in FINAL]
    ctx.history.add(Sample(time.time(), overview.counts, reading.oldest_due_seconds))
    try:
        since = float(one(query, "since") or 0)
    except ValueError:
        since = 0.0
    counts = [
        (h.link("/failed", s) if s == EventStatus.FAILED.value else h.text(s), h.text(n))
        for s, n in overview.counts.items()
    ]
    oldest = "none is due"
    if reading.oldest_due_seconds is not None:
        event = h.link("/event", reading.oldest_due_event, id=reading.oldest_due_event or "")
        oldest = f"{h.text(human(reading.oldest_due_seconds))} ({event})"
    parts = [
        "<h2>Relay health</h2>",
        health_panel(h, health, reading, under_way),
        "<h2>Backlog</h2>",
        h.table(("status", "events"), counts, id="counts"),
        f"<p>Oldest due event waiting: <strong id=oldest>{oldest}</strong></p>",
        f"<p id=recent>In the last {h.text(human(overview.window_seconds))}: "
        f"<strong>{overview.delivered}</strong> delivered; in the last "
        f"{h.text(human(reading.window_seconds))}: <strong>{reading.failed_lately}</strong> "
        "failed.</p>",
        "<h2>Throughput and backlog</h2>",
        recent_chart(recent_points(recent, pending), recent.truncated),
        backlog_chart(ctx.history.since(since)),
        "<h2>Partitions</h2>",
        partitions_summary(h, reading, overview.held, ctx.partitions),
        "<h2>Held aggregates</h2>",
        _held_table(ctx, overview.held),
    ]
    return 200, "".join(parts)


def failed(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    event_type, aggregate = one(query, "type"), one(query, "aggregate")
    plan = plan_requeue(ctx.db, ctx.collection, event_type=event_type, aggregate_id=aggregate)
    rows = [
        (
            f'<input type=checkbox name=id value="{h.text(e.event_id)}" '
            f'aria-label="select {h.text(e.event_id)}">',
            h.link("/event", e.event_id, id=e.event_id),
            h.text(e.event_type),
            h.text(e.aggregate_id),
            h.text(e.attempts),
            h.text(e.updated_at),
            h.text(e.last_error),
        )
        for e in listed(plan, LIST_LIMIT)
    ]
    matching = {k: v for k, v in (("type", event_type), ("aggregate", aggregate)) if v}
    filters = (
        "<form method=get action=/failed class=filters>"
        f'<label>event type <input name=type value="{h.text(event_type)}"></label>'
        f'<label>aggregate id <input name=aggregate value="{h.text(aggregate)}"></label>'
        "<button type=submit>Filter</button></form>"
    )
    every = matching or {"all": "1"}  # no filter: every FAILED event, asked for by name
    shown = f" (the first {len(rows)} listed)" if plan.matched > len(rows) else ""
    body = [
        filters,
        f"<p id=matched><strong>{plan.matched}</strong> FAILED events match{shown}.</p>",
    ]
    if rows:
        headers = ("", "event", "type", "aggregate", "attempts", "updated", "last error")
        body += [
            "<form method=get action=/requeue id=selection>",
            h.table(headers, rows, id="failed"),
            "<button type=submit>Requeue selected…</button></form>",
            f"<p>{h.link('/requeue', f'Requeue all {plan.matched} matching…', **every)}</p>",
        ]
    return 200, h.page("Failed events", "".join(body))


def event(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    event_id = one(query, "id") or ""
    document = event_document(ctx.db, ctx.collection, event_id)
    if document is None:
        return 404, h.page("No such event", f"<p>No event {h.text(event_id)}.</p>")
    payload = document.pop(PAYLOAD, None)
    rows = [
        (h.text(name), f"<pre>{h.text(v)}</pre>" if isinstance(v, (dict, list)) else h.text(v))
        for name, v in sorted(document.items())
    ]
    actions = ""
    if document.get(STATUS) == EventStatus.FAILED.value:
        actions += h.link("/requeue", "Requeue this event…", id=event_id)
    if document.get(HELD) is True:
        aggregate = str(document.get(AGGREGATE_ID))
        actions += " " + h.link("/release", "Release its aggregate…", aggregate=aggregate)
    body = (
        f"<p>{actions}</p><h2>payload</h2><pre id=payload>{h.text(payload)}</pre>"
        + "<h2>fields</h2>"
        + h.table(("field", "value"), rows, id="fields")
    )
    return 200, h.page(f"Event {event_id}", body)


def held(ctx: Context, query: Query) -> PageAnswer:
    return 200, ctx.html.page(
        "Held aggregates", _held_table(ctx, list_held(ctx.db, ctx.collection))
    )


def _held_table(ctx: Context, aggregates: list[HeldAggregate]) -> str:
    h = ctx.html
    if not aggregates:
        return "<p class=note>No aggregate is held.</p>"
    rows = [
        (
            h.text(a.aggregate_type),
            h.text(a.aggregate_id),
            " ".join(h.link("/event", i, id=i) for i in a.event_ids),
            h.text(a.last_error),
            h.link("/release", "Release…", aggregate=a.aggregate_id),
        )
        for a in aggregates
    ]
    return h.table(("type", "aggregate", "held by", "last error", ""), rows, id="held")
