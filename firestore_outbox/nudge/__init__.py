"""The fast path: after a commit, nudge the relay to deliver its events now.

`OUTBOX_NUDGE` picks the target (`off`, the default; `fc3`; `http`; `process`). A unit of
work asks for the process's `Nudger` (`firestore_outbox.producer.nudger_for`, which reads the
configuration, then `shared_nudger` here) once it committed outbox events, and hands it their
partitions; the relay invocation that gets the nudge drains those partitions first
(`Relay.run(partitions=...)`). See docs/fast-path.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from firestore_outbox.errors import OutboxError
from firestore_outbox.nudge.sender import Nudger, NudgeTarget
from firestore_outbox.nudge.settings import NudgeMode, NudgeSettings
from firestore_outbox.partitions import PARTITION

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.producer.batch import Write

__all__ = [
    "NudgeMode",
    "NudgeSettings",
    "NudgeTarget",
    "Nudger",
    "hand_off_for",
    "nudge_committed",
    "shared_nudger",
]

logger = logging.getLogger("firestore_outbox.nudge")

_lock = threading.RLock()
# The process's nudger for the configuration it was built from (None: off or unusable); one
# that was closed is built again when next asked for (`_open_one`).
_refused: set[str] = set()
_shared: dict[tuple[NudgeSettings, Settings], Nudger | None] = {}
_hand_offs: dict[tuple[NudgeSettings, Settings], Nudger | None] = {}


def shared_nudger(nudge: NudgeSettings | str, db: Client, settings: Settings) -> Nudger | None:
    """This process's `Nudger` for `nudge` (the configured `OUTBOX_NUDGE`), built on first
    use; None when off. A configuration that cannot be used (`nudge` is then the problem) is
    logged once and nudges nothing: the commit must not fail for it, and the timer delivers."""
    if isinstance(nudge, str):
        _refuse(nudge)
        return None
    if nudge.mode is NudgeMode.OFF:
        return None
    with _lock:
        return _open_one(_shared, (nudge, settings), lambda: _build(nudge, db, settings))


def _open_one(
    cache: dict[tuple[NudgeSettings, Settings], Nudger | None],
    key: tuple[NudgeSettings, Settings],
    build: Callable[[], Nudger | None],
) -> Nudger | None:
    """With `_lock` held: `cache`'s nudger for `key`, built when there is none or the one
    there was closed (whoever closed it: it sends nothing more, and a later commit's nudge
    would have gone nowhere)."""
    nudger = cache.get(key)
    if key not in cache or (nudger is not None and nudger.closed):
        nudger = cache[key] = build()
    return nudger


def _build(
    nudge: NudgeSettings,
    db: Client,
    settings: Settings,
    *,
    unique: bool = False,
) -> Nudger | None:
    from firestore_outbox.nudge.targets import build_target

    try:
        target = build_target(nudge, db, settings, unique=unique)
    except OutboxError as exc:
        _refuse(str(exc))
        return None
    nudger = Nudger(target, queue_size=nudge.queue_size, interval_seconds=nudge.interval_seconds)
    bind = getattr(target, "bind", None)
    if bind is not None:  # a drain in this process hands what it re-checks back to it
        bind(nudger)
    return nudger


def hand_off_for(db: Client, settings: Settings, nudge: NudgeSettings | str) -> Nudger | None:
    """The nudger a nudged relay invocation (Function Compute, an HTTP trigger) hands the
    partitions its re-check found to, when `OUTBOX_NUDGE` nudges another invocation (`fc3`,
    `http`); None otherwise (the run claims them again). Its nudges are never refused as
    repeats of a producer's (each has a task id of its own)."""
    if isinstance(nudge, str) or nudge.mode not in (NudgeMode.FC3, NudgeMode.HTTP):
        return None
    with _lock:
        return _open_one(
            _hand_offs, (nudge, settings), lambda: _build(nudge, db, settings, unique=True)
        )


def nudge_committed(
    nudger: Nudger | Callable[[], Nudger | None] | None,
    settings: Settings,
    writes: Sequence[Write],
) -> None:
    """After a commit of `writes`: nudge the partitions of the outbox events among them,
    through `nudger` (a callable: the one it answers, asked only when there are some). Never
    raises: the commit has landed."""
    try:
        outbox = settings.outbox_collection
        partitions = {
            w.data[PARTITION]
            for w in writes
            if w.op == "create" and w.ref.parent.id == outbox and PARTITION in w.data
        }
        if not partitions:
            return
        chosen = nudger if isinstance(nudger, Nudger) or nudger is None else nudger()
        if isinstance(chosen, Nudger):
            chosen.nudge(partitions)
    except Exception:  # a nudge that cannot go costs latency only
        logger.exception("nudge not sent")


def _refuse(problem: str) -> None:
    with _lock:
        first = problem not in _refused
        _refused.add(problem)
    if first:
        logger.error("nudges off: %s", problem)
