"""`recent_points`: the console's first-load history, minute by minute, from delivered and
PENDING events' timestamps."""

from __future__ import annotations

import datetime as dt

from firestore_outbox.ops.history import Recent, recent_points

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)


def at(minutes_ago: float) -> dt.datetime:
    return NOW - dt.timedelta(minutes=minutes_ago)


def test_the_backlog_is_rebuilt_backwards_from_now() -> None:
    # Two events created 5 minutes ago, delivered 2.5 minutes ago; one created 1.5 ago, pending.
    recent = Recent(
        at(5),
        NOW,
        delivered=[(at(2.5), at(4.9)), (at(2.5), at(4.9))],
        pending_created=[at(1.5)],
        truncated=False,
    )
    points = recent_points(recent, pending_now=1)
    assert [p.at for p in points] == [at(4), at(3), at(2), at(1), at(0)]
    assert [p.delivered for p in points] == [0, 0, 2, 0, 0]
    # Before the delivery both waited; after it none; the new one from 1.5 minutes ago.
    assert [p.backlog for p in points] == [2, 2, 0, 1, 1]
