"""What a nudge carries: a CloudEvent of type `NUDGE_TYPE` whose data names the partitions
of the events just committed. FC 3.0's async invoke delivers it as the relay function's
event; the `http` target POSTs the same JSON, which `function_compute.relay_handler.handler`
accepts as its event too. A nudge carries no event data: a forged one can only make the relay
look at partitions a timer tick would look at anyway, so it is not signed."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Collection
from typing import Any

from firestore_outbox.publishers.base import Delivery
from firestore_outbox.publishers.fc.shared import structured_cloudevent

__all__ = ["NUDGE_TYPE", "nudge_delivery", "nudged_partitions"]

NUDGE_TYPE = "firestore-outbox.relay.nudge"
# Nudges of the same partitions within one window share a task id: FC 3.0 refuses the
# repeats that several producer processes send for the same burst (a 409, taken as sent).
DEDUP_WINDOW_SECONDS = 0.2


def nudge_delivery(
    partitions: Collection[int], source: str, deadline: float, *, unique: bool = False
) -> Delivery:
    """The nudge of `partitions` as a `Delivery`; its id (FC's task id) names the partitions
    and the dedup window, so repeats across processes within the window share it. `unique`:
    an id of its own instead, never refused as a repeat (a relay's hand-off: it nudges an
    event its re-check found, which an earlier nudge's invocation may have missed)."""
    ordered = sorted(set(partitions))
    window = uuid.uuid4().hex[:16] if unique else str(int(time.time() / DEDUP_WINDOW_SECONDS))
    digest = hashlib.sha256(",".join(map(str, ordered)).encode()).hexdigest()[:16]
    return Delivery(
        event_id=f"nudge-{digest}-{window}",
        event_type=NUDGE_TYPE,
        source=source,
        subject=",".join(map(str, ordered))[:200],
        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        body=json.dumps({"partitions": ordered}).encode(),
        attempt=1,
        deadline=deadline,
    )


def nudge_body(delivery: Delivery) -> bytes:
    """The JSON the `http` target POSTs: the same CloudEvent FC 3.0 would deliver."""
    return structured_cloudevent(delivery)


def nudged_partitions(trigger: Any) -> list[int] | None:
    """The partitions a relay invocation's event nudges, or None when it is no nudge."""
    if not isinstance(trigger, dict) or trigger.get("type") != NUDGE_TYPE:
        return None
    data = trigger.get("data")
    found = data.get("partitions") if isinstance(data, dict) else None
    if not isinstance(found, list):
        return []
    return sorted({p for p in found if isinstance(p, int) and not isinstance(p, bool) and p >= 0})
