"""What a nudge carries: a CloudEvent of type `NUDGE_TYPE` whose data names the partitions
of the events just committed. FC 3.0's async invoke delivers it as the relay function's
event; the `http` target POSTs the same JSON, signed with `OUTBOX_NUDGE_SECRET`, to the relay
function's HTTP trigger (`firestore_outbox.function_compute.http_handler`, which refuses an
unsigned one before it asks Firestore anything). A nudge carries no event data: a forged one
could only make the relay look at partitions a timer tick would look at anyway, but an
anonymous trigger would let anyone start invocations.

It is still input from outside (an HTTP trigger, another team's producer): `read_nudge` takes
only whole numbers in `[0, RELAY_PARTITIONS)`, once each, from a list no longer than
`RELAY_PARTITIONS`, so the work an invocation does is bounded by the relay's own settings,
not by the body; everything else is refused with a reason, never raised. A nudge carries its
producer's `partitionCount`: one that differs from the relay's names partitions of another
layout (a producer not yet moved to a new `RELAY_PARTITIONS`), and is refused whole, logged
at most once a minute (`ForeignCounts`)."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from firestore_outbox.publishers.base import Delivery
from firestore_outbox.publishers.fc.shared import structured_cloudevent

__all__ = ["NUDGE_TYPE", "NudgeRead", "nudge_delivery", "nudged_partitions", "read_nudge"]

logger = logging.getLogger("firestore_outbox.nudge")

NUDGE_TYPE = "firestore-outbox.relay.nudge"
# Nudges of the same partitions within one window share a task id: FC 3.0 refuses the
# repeats that several producer processes send for the same burst (a 409, taken as sent).
DEDUP_WINDOW_SECONDS = 0.2
# A producer of another partition layout is logged at most once in this time.
FOREIGN_LOG_SECONDS = 60.0
# Refused entries a refusal's reason names (the rest are counted).
_NAMED = 3


def nudge_delivery(
    partitions: Collection[int],
    source: str,
    deadline: float,
    *,
    unique: bool = False,
    count: int | None = None,
) -> Delivery:
    """The nudge of `partitions` as a `Delivery`; its id (FC's task id) names the partitions
    and the dedup window, so repeats across processes within the window share it. `unique`:
    an id of its own instead, never refused as a repeat (a relay's hand-off: it nudges an
    event its re-check found, which an earlier nudge's invocation may have missed). `count`:
    the producer's `RELAY_PARTITIONS`, sent as `partitionCount`."""
    ordered = sorted(set(partitions))
    window = uuid.uuid4().hex[:16] if unique else str(int(time.time() / DEDUP_WINDOW_SECONDS))
    digest = hashlib.sha256(",".join(map(str, ordered)).encode()).hexdigest()[:16]
    return Delivery(
        event_id=f"nudge-{digest}-{window}",
        event_type=NUDGE_TYPE,
        source=source,
        subject=",".join(map(str, ordered))[:200],
        time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        body=json.dumps(
            {"partitions": ordered, **({} if count is None else {"partitionCount": count})}
        ).encode(),
        attempt=1,
        deadline=deadline,
    )


def nudge_body(delivery: Delivery) -> bytes:
    """The JSON the `http` target POSTs: the same CloudEvent FC 3.0 would deliver."""
    return structured_cloudevent(delivery)


def nudged_partitions(trigger: Any, count: int) -> list[int] | None:
    """The partitions a relay invocation's event nudges (`read_nudge`'s), or None when it is
    no nudge."""
    read = read_nudge(trigger, count)
    return None if read is None else read.partitions


@dataclass(frozen=True)
class NudgeRead:
    """A nudge as a relay of `RELAY_PARTITIONS` partitions takes it: the `partitions` to
    drain (sorted, each once), how many entries were `refused` and why (`reason`), and the
    producer's `partitionCount` when it differs from the relay's (`foreign`; its value, when
    a whole number: `foreign_count`)."""

    partitions: list[int]
    refused: int = 0
    reason: str | None = None
    foreign: bool = False
    foreign_count: int | None = field(default=None, compare=False)


def read_nudge(trigger: Any, count: int) -> NudgeRead | None:
    """`trigger` read as a nudge to a relay of `count` partitions (see the module), or None
    when it is no nudge. Never raises; the list is looked at only when no longer than
    `count`, so a body of any size costs no more than a valid nudge."""
    if not isinstance(trigger, dict) or trigger.get("type") != NUDGE_TYPE:
        return None
    data = trigger.get("data")
    if not isinstance(data, dict):
        return NudgeRead([], 1, "data is not a JSON object")
    theirs = data.get("partitionCount")
    if theirs is not None and (not _whole(theirs) or theirs != count):
        shown = theirs if _whole(theirs) and 0 < theirs <= 10**6 else "unusable"
        reason = f"partitionCount ({shown}) is not this relay's RELAY_PARTITIONS ({count})"
        return NudgeRead([], 1, reason, True, theirs if _whole(theirs) else None)
    found = data.get("partitions")
    if not isinstance(found, list):
        return NudgeRead([], 1, "partitions is not a list")
    if not found:
        return NudgeRead([], 1, "partitions is empty")
    if len(found) > count:
        reason = f"partitions has {len(found)} entries, more than RELAY_PARTITIONS ({count})"
        return NudgeRead([], len(found), reason)
    wanted: set[int] = set()
    problems: list[str] = []
    for index, partition in enumerate(found):
        if _whole(partition) and 0 <= partition < count:
            wanted.add(partition)
        else:
            problems.append(_problem(index, partition, count))
    if not problems:
        return NudgeRead(sorted(wanted))
    more = f" ({len(problems) - _NAMED} more)" if len(problems) > _NAMED else ""
    return NudgeRead(sorted(wanted), len(problems), "; ".join(problems[:_NAMED]) + more)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _problem(index: int, value: Any, count: int) -> str:
    """Why entry `index` is refused; its value is never echoed (input from outside)."""
    if not _whole(value):
        return f"partitions[{index}] is a {type(value).__name__}, not a whole number"
    if value < 0:
        return f"partitions[{index}] is negative"
    return f"partitions[{index}] is not below RELAY_PARTITIONS ({count})"


class ForeignCounts:
    """Logs nudges from producers of another partition count, at most once a minute."""

    def __init__(self, every: float = FOREIGN_LOG_SECONDS) -> None:
        self._every = every
        self._lock = threading.Lock()
        self._last: float | None = None
        self.suppressed = 0  # nudges not logged since the last line

    def saw(self, read: NudgeRead, count: int) -> bool:
        """Log `read` if it came from another partition layout and none was logged within
        the minute; whether it logged."""
        if not read.foreign:
            return False
        now = time.monotonic()
        with self._lock:
            if self._last is not None and now - self._last < self._every:
                self.suppressed += 1
                return False
            self._last, suppressed, self.suppressed = now, self.suppressed, 0
        logger.warning(
            "a producer nudges with partitionCount %s, this relay has RELAY_PARTITIONS=%d: "
            "its nudges are refused (set RELAY_PARTITIONS alike on producers and relay); "
            "%d more such nudges since the last line",
            read.foreign_count if read.foreign_count is not None else "unusable",
            count,
            suppressed,
        )
        return True
