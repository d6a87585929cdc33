"""`outbox inspect`: one outbox document printed whole, any Firestore value included."""

from __future__ import annotations

import json
from typing import Any

from google.cloud import firestore
from google.cloud.firestore_v1.vector import Vector

from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_raw_event, outbox
from tests.support.operator_commands import Run, prepared_outbox, run_outbox  # noqa: F401  (fixtures)


def test_inspect_prints_the_whole_document(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    code, out, _ = run("inspect", "f-422")

    assert code == 0
    shown = json.loads(out)
    stored = outbox(db, settings)["f-422"]
    assert set(shown) == set(stored) | {"_createTime", "_updateTime"}
    assert shown["lastError"] == "rejected after attempt 1: HTTP 422"
    assert shown["payload"] == stored["payload"] and shown["eventType"] == "PaymentTaken"
    assert shown["createdAt"].endswith("Z") and shown["processedAt"] is None

    assert run("inspect", "no-such-event")[0:3:2] == (
        1,
        "error: no event no-such-event in outbox\n",
    )
    code, _, err = run("inspect", "a/b")
    assert code == 2 and "EVENT_ID" in err


def test_inspect_prints_any_firestore_value_even_nan(
    run: Run, db: firestore.Client, settings: Settings
) -> None:
    nan, inf = float("nan"), float("inf")
    add_raw_event(
        db,
        settings,
        "odd",
        status="FAILED",
        attempts=nan,
        lastError=None,
        payload={
            "price": nan,
            "limits": [inf, -inf, 1.5],
            "where": firestore.GeoPoint(52.5, 13.4),
            "raw": b"\x00\xff",
            "order": db.document("orders/o-1"),
        },
        embedding=Vector([0.5, 2.0]),  # Firestore keeps vectors only as top-level fields
    )

    code, out, err = run("inspect", "odd")

    assert code == 0, err
    shown = json.loads(out)
    assert shown["attempts"] == "NaN"
    assert shown["payload"]["price"] == "NaN"
    assert shown["payload"]["limits"] == ["Infinity", "-Infinity", 1.5]
    assert shown["payload"]["where"] == {"latitude": 52.5, "longitude": 13.4}
    assert shown["payload"]["order"] == "orders/o-1"
    assert shown["embedding"] == [0.5, 2.0]
