"""The fast path: after a commit, nudge the relay to deliver its events now.

`OUTBOX_NUDGE` picks the target (`off`, the default; `fc3`; `http`; `process`). A unit of
work asks `nudger_for()` for the process's `Nudger` once it committed outbox events, and hands
it their partitions; the relay invocation that gets the nudge drains those partitions first
(`Relay.run(partitions=...)`). See docs/fast-path.md.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from firestore_outbox.errors import OutboxError
from firestore_outbox.nudge.sender import Nudger, NudgeTarget
from firestore_outbox.nudge.settings import NudgeMode, NudgeSettings, load_nudge_settings
from firestore_outbox.partitions import PARTITION

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.config.settings import Settings
    from firestore_outbox.producer.batch import Write

__all__ = [
    "NudgeMode",
    "NudgeSettings",
    "NudgeTarget",
    "Nudger",
    "hand_off_for",
    "load_nudge_settings",
    "nudge_committed",
    "nudger_for",
]

logger = logging.getLogger("firestore_outbox.nudge")

_lock = threading.RLock()
# The process's nudger for the configuration it was built from (None: off or unusable).
_refused: set[str] = set()
_shared: dict[tuple[NudgeSettings, Settings, frozenset[Any] | None], Nudger | None] = {}
_hand_offs: dict[tuple[NudgeSettings, Settings], Nudger | None] = {}


def nudger_for(
    db: Client, settings: Settings, environ: Mapping[str, str] | None = None
) -> Nudger | None:
    """This process's `Nudger` for the configured `OUTBOX_NUDGE`, built on first use; None
    when off. A configuration that cannot be used is logged once and nudges nothing: the
    commit must not fail for it, and the timer delivers."""
    nudge = _default_settings() if environ is None else _read(environ)
    if isinstance(nudge, str):
        _refuse(nudge)
        return None
    if nudge.mode is NudgeMode.OFF:
        return None
    key = (nudge, settings, None if environ is None else frozenset(environ.items()))
    with _lock:
        if key not in _shared:
            _shared[key] = _build(nudge, db, settings, environ)
        return _shared[key]


def _build(
    nudge: NudgeSettings,
    db: Client,
    settings: Settings,
    environ: Mapping[str, str] | None,
    *,
    unique: bool = False,
) -> Nudger | None:
    from firestore_outbox.nudge.targets import build_target

    try:
        target = build_target(nudge, db, settings, environ, unique=unique)
    except OutboxError as exc:
        _refuse(str(exc))
        return None
    nudger = Nudger(target, queue_size=nudge.queue_size, interval_seconds=nudge.interval_seconds)
    bind = getattr(target, "bind", None)
    if bind is not None:  # a drain in this process hands what it re-checks back to it
        bind(nudger)
    return nudger


def hand_off_for(db: Client, settings: Settings) -> Nudger | None:
    """The nudger a nudged relay invocation (Function Compute, an HTTP trigger) hands the
    partitions its re-check found to, when `OUTBOX_NUDGE` nudges another invocation (`fc3`,
    `http`); None otherwise (the run claims them again). Its nudges are never refused as
    repeats of a producer's (each has a task id of its own)."""
    nudge = _default_settings()
    if isinstance(nudge, str) or nudge.mode not in (NudgeMode.FC3, NudgeMode.HTTP):
        return None
    with _lock:
        if (nudge, settings) not in _hand_offs:
            _hand_offs[nudge, settings] = _build(nudge, db, settings, None, unique=True)
        return _hand_offs[nudge, settings]


def nudge_committed(
    nudger: Nudger | bool, db: Client, settings: Settings, writes: Sequence[Write]
) -> None:
    """After a commit of `writes`: nudge the partitions of the outbox events among them,
    through `nudger` (True: `nudger_for`'s). Never raises: the commit has landed."""
    try:
        outbox = settings.outbox_collection
        partitions = {
            w.data[PARTITION]
            for w in writes
            if w.op == "create" and w.ref.parent.id == outbox and PARTITION in w.data
        }
        if not partitions:
            return
        chosen = nudger_for(db, settings) if nudger is True else nudger
        if isinstance(chosen, Nudger):
            chosen.nudge(partitions)
    except Exception:  # a nudge that cannot go costs latency only
        logger.exception("nudge not sent")


@functools.cache
def _default_settings() -> NudgeSettings | str:
    """The process's own environment, read once (as `default_settings()` is)."""
    return _read(None)


def _read(environ: Mapping[str, str] | None) -> NudgeSettings | str:
    try:
        return load_nudge_settings(environ)
    except OutboxError as exc:
        return str(exc)


def _refuse(problem: str) -> None:
    with _lock:
        first = problem not in _refused
        _refused.add(problem)
    if first:
        logger.error("nudges off: %s", problem)
