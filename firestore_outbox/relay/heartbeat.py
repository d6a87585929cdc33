"""The relay's heartbeat: what its last runs saw, for the watchdog and the console.

Shape, and why: `SHARDS` documents (`relay-0` .. `relay-7`) in `OUTBOX_HEALTH_COLLECTION`.
A writer (one `Relay`: a warm Function Compute instance, an `outbox relay` process) picks one
shard at random when it is made and keeps it. It writes after a run only when its last write
is `RELAY_HEARTBEAT_SECONDS` old or what it reports changed (status, stop reason, channel):
one small write, at most every 15 s per writer, spread over eight documents, so a fan-out or
a burst of nudged invocations never makes one document a hotspot (Firestore sustains about
one write a second per document), and the watchdog reads eight documents, whatever the number
of relays.

Each write is conditional on the shard's update time as this writer last saw it (read once,
then carried from its own writes): a writer that lost the race reads the shard again and
carries what it must on (when the channel broke), then writes once more; a second loss means
another writer has just reported, and the beat is skipped. `at` is Firestore's commit time.

The channel: a run the breaker stopped reports the channel broken, since the first run that
found it so (carried across runs and writers); a run that delivered, or leased and was not
stopped by the breaker, reports it whole. A run that found nothing due says nothing about it
and carries the state on.
"""

from __future__ import annotations

import datetime
import logging
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.observability.logs import log_event

if TYPE_CHECKING:
    from google.cloud.firestore import Client

__all__ = ["SHARDS", "Beat", "Heartbeat", "shard_ids"]

logger = logging.getLogger("firestore_outbox.relay")

SHARDS = 8
# Less time than this left in the run's envelope: the beat is skipped (and logged).
MIN_SECONDS = 0.2
_LOST = (
    google_exceptions.FailedPrecondition,
    google_exceptions.AlreadyExists,
    google_exceptions.NotFound,
)


def shard_ids() -> list[str]:
    """The heartbeat documents' ids, the watchdog reads them all."""
    return [f"relay-{n}" for n in range(SHARDS)]


@dataclass(frozen=True)
class Beat:
    """One heartbeat document as read: `at` its last write (Firestore's clock); `channel`
    the broken channel's error class (None: whole), `channel_error` its last error,
    `channel_since` when a run first found it broken; `nudges_failed` the hand-off nudges
    that failed since this writer's last beat."""

    shard: str
    at: datetime.datetime | None
    status: str
    stopped_by: str
    error: str | None
    counts: Mapping[str, int]
    channel: str | None
    channel_error: str | None
    channel_since: datetime.datetime | None
    nudges_failed: int
    nudges_sent: int

    @classmethod
    def read(cls, snapshot: Any) -> Beat:
        data = snapshot.to_dict() or {}
        channel = data.get("channel") or {}
        nudges = data.get("nudges") or {}
        return cls(
            snapshot.id,
            _timestamp(data.get("at")),
            str(data.get("status") or ""),
            str(data.get("stoppedBy") or ""),
            data.get("error"),
            {k: int(v) for k, v in (data.get("counts") or {}).items()},
            channel.get("errorClass"),
            channel.get("error"),
            _timestamp(channel.get("since")),
            int(nudges.get("failed") or 0),
            int(nudges.get("sent") or 0),
        )


class Heartbeat:
    """Writes one relay's beats to its shard of `collection` (see the module docstring)."""

    def __init__(
        self,
        db: Client,
        collection: str,
        *,
        every_seconds: float,
        timeout: float,
        rng: random.Random | None = None,
    ) -> None:
        self._ref = db.collection(collection).document(f"relay-{(rng or random).randrange(SHARDS)}")
        self._db, self._every, self._timeout = db, every_seconds, timeout
        self._seen: Any = None  # the shard's update time as last seen (None: not read yet)
        self._exists = False
        self._last: tuple[float, tuple[Any, ...]] | None = None
        self._channel: dict[str, Any] | None = None
        self._nudges = {"sent": 0, "failed": 0}
        self._call_timeout = timeout
        self._lock = threading.Lock()

    def count_nudges(self, sent: int, failed: int) -> None:
        """Add hand-off nudges sent and failed: the next beat reports them."""
        self._nudges["sent"] += sent
        self._nudges["failed"] += failed

    def beat(self, summary: Mapping[str, Any], *, until: float | None = None) -> bool:
        """Report a run's `summary` (its JSON) if due, every call done by `until`
        (`time.monotonic()`: the run's envelope); True when written. Never raises: a heartbeat
        that cannot be written (in time) is logged, and the run's own result stands."""
        key = (summary.get("status"), summary.get("stoppedBy"), summary.get("channel"))
        now = time.monotonic()
        if self._last is not None and self._last[1] == key and now - self._last[0] < self._every:
            return False
        left = self._timeout if until is None else min(self._timeout, until - now)
        if left < MIN_SECONDS:
            log_event(
                logger,
                logging.WARNING,
                "relay.heartbeat_failed",
                "relay heartbeat not written: the run left no time for it",
            )
            return False
        if not self._lock.acquire(blocking=False):
            return False  # another run of this relay (another thread) is beating: it reports
        # Two reads and two writes at most (a lost race), all within what is left.
        self._call_timeout = left / 4
        try:
            for _ in range(2):
                if self._seen is None:
                    self._read()
                if self._write(summary):
                    self._last = (now, key)
                    self._nudges = {"sent": 0, "failed": 0}
                    return True
                self._seen = None  # another writer came first: read it and try once more
        except google_exceptions.GoogleAPIError as exc:
            log_event(
                logger,
                logging.WARNING,
                "relay.heartbeat_failed",
                f"relay heartbeat not written: {type(exc).__name__}",
                errorClass=type(exc).__name__,
            )
            self._seen = None
        finally:
            self._lock.release()
        return False

    def _read(self) -> None:
        timeout = self._call_timeout
        snapshot = self._ref.get(timeout=timeout, retry=bounded_retry(timeout))
        self._exists = snapshot.exists
        self._seen = snapshot.update_time if snapshot.exists else False
        # The shard's state is the latest any relay reported: another may have found the
        # channel whole again since this one last wrote.
        channel = (snapshot.to_dict() or {}).get("channel") if snapshot.exists else None
        self._channel = channel if isinstance(channel, dict) and channel else None

    def _write(self, summary: Mapping[str, Any]) -> bool:
        self._channel = _channel_after(summary, self._channel)
        counts = {k: summary.get(k, 0) for k in ("processed", "failed", "retried", "leased")}
        data = {
            "at": SERVER_TIMESTAMP,
            "instanceId": summary.get("instanceId"),
            "status": summary.get("status"),
            "stoppedBy": summary.get("stoppedBy"),
            "error": summary.get("error"),
            "counts": counts,
            "channel": self._channel,
            "nudges": dict(self._nudges),
        }
        timeout, retry = self._call_timeout, bounded_retry(self._call_timeout)
        try:
            if self._exists:
                option = self._db.write_option(last_update_time=self._seen)
                result = self._ref.update(data, option=option, timeout=timeout, retry=retry)
            else:
                result = self._ref.create(data, timeout=timeout, retry=retry)
        except _LOST:
            return False
        self._seen, self._exists = result.update_time, True
        if self._channel is not None and self._channel.get("since") is SERVER_TIMESTAMP:
            self._channel = {**self._channel, "since": result.update_time}
        return True


def _channel_after(
    summary: Mapping[str, Any], before: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The channel's state after a run: see the module docstring."""
    if summary.get("stoppedBy") == "channel":
        since = before.get("since") if before else None
        return {
            "errorClass": summary.get("channel"),
            "error": summary.get("channelError"),
            "since": since or SERVER_TIMESTAMP,
        }
    if summary.get("processed") or summary.get("leased"):
        return None
    return before


def _timestamp(value: Any) -> datetime.datetime | None:
    return value if isinstance(value, datetime.datetime) else None
