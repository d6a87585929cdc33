"""The console's re-drive jobs page (docs/redrive.md): the newest jobs with pause, resume
and cancel, and a new job in two steps, as `outbox replay` does it: a GET that shows the dry
run (count, first and last, per type; nothing written) and the POST that creates the job,
which the relay's timer invocations (or `outbox replay --run JOB`) then run."""

from __future__ import annotations

import logging

from firestore_outbox.console.context import Context
from firestore_outbox.console.pages import PageAnswer, Query, one
from firestore_outbox.redrive.job import FINAL, MOVES
from firestore_outbox.redrive.preview import preview
from firestore_outbox.redrive.selection import DELIVERED, STATUSES, Selection, parse_moment
from firestore_outbox.redrive.service import start_job
from firestore_outbox.redrive.targets import describe, target_for

logger = logging.getLogger(__name__)

FIELDS = ("since", "until", "type", "aggregateType", "aggregateId", "status", "target", "rate")
DEFAULT_RATE = "10"
LISTED = 20


def _selection(ctx: Context, query: Query) -> Selection:
    """The form's selection; `InvalidInput` (a 400 page) names the field that is wrong."""
    statuses = [s for s in query.get("status", []) if s]
    return Selection(
        since=parse_moment("since", one(query, "since"), ctx.now()),
        until=parse_moment("until", one(query, "until"), ctx.now()),
        event_types=tuple(t.strip() for t in (one(query, "type") or "").split(",") if t.strip()),
        aggregate_type=one(query, "aggregateType"),
        aggregate_id=one(query, "aggregateId"),
        statuses=STATUSES if "all" in statuses else tuple(dict.fromkeys(statuses)) or DELIVERED,
    )


def jobs(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    rows = []
    for job in ctx.job_store().recent(LISTED):
        buttons = "".join(
            h.form("/jobs/move", command, [("job", job.job_id), ("command", command)])
            for command, (_, sources) in MOVES.items()
            if job.state in sources
        )
        rows.append(
            (
                h.text(job.job_id),
                h.text(job.state.value),
                h.text(f"{job.counts['sent']}/{job.counts['selected']}"),
                h.text(describe(job.target)),
                h.text(job.created_by),
                h.text(job.selection.describe()),
                h.text(job.last_error or ""),
                buttons,
            )
        )
    headers = ("job", "state", "sent", "target", "by", "filter", "last error", "")
    listing = h.table(headers, rows, id="jobs") if rows else "<p class=note>No job yet.</p>"
    statuses = "".join(
        f'<option value="{s}"{" selected" if s in DELIVERED else ""}>{s}</option>'
        for s in (*STATUSES, "all")
    )
    inputs = "".join(
        f'<label>{h.text(label)} <input name="{name}"{extra}></label>'
        for name, label, extra in (
            ("since", "since (RFC 3339 or 36h)", ""),
            ("until", "until", ""),
            ("type", "event types (a,b)", ""),
            ("aggregateType", "aggregate type", ""),
            ("aggregateId", "aggregate id", ""),
            ("target", "target URL (empty: the relay's publisher)", ""),
            ("rate", "events a second", f' value="{DEFAULT_RATE}"'),
        )
    )
    form = (
        "<h2>New re-drive</h2><form method=get action=/jobs/new id=new-job class=filters>"
        f"{inputs}<label>status <select name=status>{statuses}</select></label>"
        "<button type=submit>Dry run…</button></form>"
    )
    return 200, h.page("Re-drive jobs", listing + form)


def confirm_job(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    selection, target = _selection(ctx, query), target_for(one(query, "target"))
    found = preview(ctx.db.collection(ctx.collection), selection, ctx.partitions)
    body = [
        f"<p id=dry-run>Dry run: <strong>{found.count}</strong> events to send to "
        f"{h.text(describe(target))} ({h.text(selection.describe())}). Nothing is written "
        "until you confirm.</p>"
    ]
    for label, event in (("first", found.first), ("last", found.last)):
        if event is not None:
            body.append(
                f"<p>{label}: {h.link('/event', event.event_id, id=event.event_id)} "
                f"{h.text(event.event_type)} {h.text(event.created_at)}</p>"
            )
    if found.per_type:
        rows = [(h.text(t), h.text(n)) for t, n in sorted(found.per_type.items())]
        body.append(h.table(("event type", "events"), rows, id="per-type"))
    if found.elsewhere:
        body.append(
            f"<p id=elsewhere>{found.elsewhere} of them were written under another "
            "RELAY_PARTITIONS: selected all the same.</p>"
        )
    if found.count:
        fields = [(name, value) for name in FIELDS for value in query.get(name, []) if value]
        body.append("<label>started by <input name=by form=confirm required></label>")
        body.append(
            h.form("/jobs/new", f"Start a job of {found.count} events", fields, id="confirm")
        )
    return 200, h.page("New re-drive job", "".join(body))


def start(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    job = start_job(
        ctx.job_store(),
        ctx.db.collection(ctx.collection),
        _selection(ctx, query),
        partitions=ctx.partitions,
        target=target_for(one(query, "target")),
        rate=_rate(one(query, "rate")),
        created_by=f"{one(query, 'by') or ''} (console)" if one(query, "by") else "",
    )
    logger.info("console: re-drive job %s created by %s", job.job_id, job.created_by)
    body = (
        f"<p class=done id=result>Job <strong>{h.text(job.job_id)}</strong> created: "
        f"{job.counts['selected']} events. The relay's timer invocations run it, or "
        f"<code>outbox replay --run {h.text(job.job_id)}</code>.</p>"
        f"<p>{h.link('/jobs', 'Back to the jobs')}</p>"
    )
    return 200, h.page("Re-drive job created", body)


def move(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    command = one(query, "command") or ""
    if command not in MOVES:
        return 400, h.page("Bad request", "<p>command must be pause, resume or cancel.</p>")
    job = ctx.job_store().move(one(query, "job") or "", command)
    logger.info("console: re-drive job %s: %s", job.job_id, command)
    final = " (final)" if job.state in FINAL else ""
    body = (
        f"<p class=done id=result>Job {h.text(job.job_id)} is {h.text(job.state.value)}"
        f"{final}.</p><p>{h.link('/jobs', 'Back to the jobs')}</p>"
    )
    return 200, h.page("Re-drive job", body)


def _rate(text: str | None) -> float:
    try:
        return float(text or DEFAULT_RATE)
    except ValueError:
        return float("nan")  # refused by name by `check_rate`
