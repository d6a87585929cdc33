"""The console's actions, each in two steps: a GET that counts and lists what would change
(the dry run, writing nothing) with a button to confirm, and the POST that does it through
the function the command calls (`ops.requeue`, `ops.held.release_held`), so the event
records it exactly as `outbox requeue` and `outbox held --release` record it."""

from __future__ import annotations

import logging

from firestore_outbox.console.context import Context
from firestore_outbox.console.pages import PageAnswer, Query, one
from firestore_outbox.ops import plan_requeue, requeue
from firestore_outbox.ops.held import list_held, release_held
from firestore_outbox.ops.requeue import RequeuePlan, listed

logger = logging.getLogger(__name__)

# How many events the confirmation page lists (the count is complete).
CONFIRM_LIST = 20


def _choice(query: Query) -> tuple[list[tuple[str, str]], str] | None:
    """The events asked for, as the fields that ask again and in words; None: none asked."""
    ids = [i.strip() for i in query.get("id", []) if i.strip()]
    if ids:
        return [("id", i) for i in ids], f"{len(ids)} selected"
    chosen = [(k, v) for k in ("type", "aggregate") if (v := one(query, k))]
    if chosen:
        return chosen, " and ".join(f"{k} {v}" for k, v in chosen)
    if one(query, "all") == "1":
        return [("all", "1")], "every FAILED event"
    return None


def _plan(ctx: Context, fields: list[tuple[str, str]]) -> RequeuePlan:
    values = dict(fields)
    return plan_requeue(
        ctx.db,
        ctx.collection,
        event_ids=[v for k, v in fields if k == "id"],
        event_type=values.get("type"),
        aggregate_id=values.get("aggregate"),
    )


def confirm_requeue(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    choice = _choice(query)
    if choice is None:
        return 400, h.page("Requeue", "<p>Choose events to requeue on the Failed page.</p>")
    fields, words = choice
    plan = _plan(ctx, fields)
    skipped = "".join(
        f"<li>{h.text(event_id)}: {h.text(why)}</li>" for event_id, why in plan.skipped.items()
    )
    body = [
        f"<p id=dry-run>Dry run ({h.text(words)}): <strong>{plan.matched}</strong> FAILED "
        "events to requeue. Nothing is written until you confirm.</p>"
    ]
    if skipped:
        body.append(f"<p>Left alone:</p><ul id=skipped>{skipped}</ul>")
    rows = [
        (h.text(e.event_id), h.text(e.attempts), h.text(e.last_error))
        for e in listed(plan, CONFIRM_LIST)
    ]
    if rows:
        body.append(h.table(("event", "attempts", "last error"), rows))
    if plan.matched:
        button = f"Requeue {plan.matched} events"
        body.append(h.form("/requeue", button, fields, id="confirm"))
    return 200, h.page("Requeue FAILED events", "".join(body))


def do_requeue(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    choice = _choice(query)
    if choice is None:
        return 400, h.page("Requeue", "<p>No events were chosen; nothing written.</p>")
    fields, words = choice
    plan = _plan(ctx, fields)
    done, changed = requeue(ctx.db, ctx.collection, plan, timeout=ctx.timeout)
    logger.info(
        "console: requeued %d FAILED events (%s), %d changed meanwhile", done, words, changed
    )
    meanwhile = f"; {changed} changed meanwhile and were left alone" if changed else ""
    body = (
        f"<p class=done id=result>Requeued <strong>{done}</strong> events "
        f"({h.text(words)}){h.text(meanwhile)}. They are PENDING and due now.</p>"
        f"<p>{h.link('/failed', 'Back to the failed events')}</p>"
    )
    return 200, h.page("Requeued", body)


def confirm_release(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    aggregate = one(query, "aggregate") or ""
    found = [a for a in list_held(ctx.db, ctx.collection) if a.aggregate_id == aggregate]
    if not found:
        return 404, h.page("Release", f"<p>Aggregate {h.text(aggregate)} is not held.</p>")
    ids = ", ".join(h.link("/event", i, id=i) for i in found[0].event_ids)
    body = (
        f"<p id=dry-run>Aggregate <strong>{h.text(aggregate)}</strong> is held by {ids}. "
        "Releasing it leaves those events FAILED and lets its later events go on without "
        "them (requeue them instead to deliver them first).</p>"
        + h.form("/release", f"Release {aggregate}", [("aggregate", aggregate)], id="confirm")
    )
    return 200, h.page("Release a held aggregate", body)


def do_release(ctx: Context, query: Query) -> PageAnswer:
    h = ctx.html
    aggregate = one(query, "aggregate") or ""
    released = release_held(ctx.db, ctx.collection, aggregate, timeout=ctx.timeout)
    logger.info("console: released %d held events of aggregate %s", released, aggregate)
    body = (
        f"<p class=done id=result>Released <strong>{released}</strong> held events of "
        f"aggregate {h.text(aggregate)}.</p><p>{h.link('/held', 'Back to held aggregates')}</p>"
    )
    return 200, h.page("Released", body)
