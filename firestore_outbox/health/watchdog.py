"""`Watchdog.check`: one look at the relay from outside it, and the alerts it calls for.

It reads the heartbeat and the backlog (`read_health`, 28 document reads with the
defaults), judges them (`assess`, as the console does), keeps the incidents
(`track`: a read, so 29 in all, and a write only when something starts or ends) and says
what it found:
an ERROR log line `watchdog.alert` per incident opened (an SLS alert rule matches
`event: watchdog.alert`), an INFO line `watchdog.recovered` per incident ended, the
`outbox.watchdog.*` metrics, and a webhook message for each.

It shares no fate with the relay: it imports no publisher and not the relay's core, and each
Firestore read and the webhook are bounded by `WATCHDOG_TIMEOUT_SECONDS`. A Firestore that
does not answer is a problem of its own, `firestore_unreachable`; with Firestore gone there
is nowhere to keep incidents, so the process keeps that one (`health.outage`: shared by every
`Watchdog` it builds for the outbox, so a warm Function Compute instance remembers between
invocations): the ERROR line and the webhook once while it lasts (a cold start during it
alerts once more; every check's `watchdog.check` line names it), and one recovery message,
recorded in the incidents document, from the first check that reads Firestore again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from firestore_outbox.firestore.deadline import error_class, firestore_host
from firestore_outbox.firestore.outbox_collections import OutboxCollections
from firestore_outbox.health.assess import Health, ProblemCode, judge, unreachable
from firestore_outbox.health.incidents import DOCUMENT, Notices, Send, track
from firestore_outbox.health.outage import OutageMemory, claim_recovery, outage_memory
from firestore_outbox.health.reading import Watched
from firestore_outbox.health.settings import WatchdogSettings
from firestore_outbox.health.webhooks import post_alert
from firestore_outbox.observability.logs import log_event
from firestore_outbox.observability.metrics import record_check

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings

__all__ = ["WatchReport", "Watchdog"]

logger = logging.getLogger("firestore_outbox.watchdog")
UNREACHABLE = ProblemCode.FIRESTORE_UNREACHABLE.value


@dataclass(frozen=True)
class WatchReport:
    """One check: the health found and what was opened, recovered and sent."""

    health: Health
    notices: Notices = field(default_factory=Notices)

    def to_json(self) -> dict[str, Any]:
        beat = self.health.last_beat
        return {
            "status": "ok" if self.health.ok else "alert",
            "problems": [
                {"code": p.code.value, "message": p.message} for p in self.health.problems
            ],
            "lastRunAgeSeconds": None
            if self.health.last_beat_age is None
            else round(self.health.last_beat_age, 1),
            "lastRunStatus": None if beat is None else beat.status,
            "lastRunStoppedBy": None if beat is None else beat.stopped_by,
            "opened": self.notices.opened,
            "recovered": self.notices.recovered,
            "alerted": self.notices.alerted,
            "toldRecovered": self.notices.told_recovered,
            "webhookError": self.notices.send_error,
        }


class Watchdog:
    """Checks the outbox that `settings` (its collection) and the relay's `partitions` and
    `lock_timeout_seconds` describe, in its `collections` (default: those of
    `settings.outbox_collection`, the heartbeats in `watchdog.collection` if set); `db` must
    bound its calls (`with_deadline`), `send` defaults to the configured webhook (none: logs
    and metrics); `memory` (default: the process's for this outbox) keeps a Firestore outage."""

    def __init__(
        self,
        db: Client,
        settings: Settings,
        watchdog: WatchdogSettings,
        *,
        partitions: int,
        lock_timeout_seconds: float,
        collections: OutboxCollections | None = None,
        send: Send | None = None,
        memory: OutageMemory | None = None,
    ) -> None:
        self._db, self._settings, self._watchdog = db, settings, watchdog
        self.collections = collections or OutboxCollections.of(
            settings.outbox_collection, health=watchdog.collection
        )
        self._watched = Watched(
            self.collections.outbox,
            self.collections.health,
            self.collections.partitions,
            partitions,
            lock_timeout_seconds,
        )
        self._send = send or self._webhook
        key = (
            settings.emulator_host,
            settings.project_id,
            settings.database,
            self.collections.health,
        )
        self._memory = memory or outage_memory(key)

    def check(self) -> WatchReport:
        w = self._watchdog
        try:
            _, health = judge(self._db, self._watched, w.thresholds, timeout=w.timeout_seconds)
            notices = track(
                self._db, self.collections.health, health, self._send, timeout=w.timeout_seconds
            )
            self._recovered(notices)
        except (google_exceptions.GoogleAPIError, TimeoutError) as exc:
            return self._unreachable(exc)
        self._log(health, notices)
        return WatchReport(health, notices)

    def _unreachable(self, exc: BaseException) -> WatchReport:
        health = unreachable(firestore_host(self._settings), error_class(exc))
        notices = Notices()
        first, due = self._memory.down()
        if first:
            notices.opened.append(UNREACHABLE)
        if due and self._tell(
            notices, "alert", [(p.code.value, p.message) for p in health.problems]
        ):
            self._memory.told()
        self._log(health, notices)
        return WatchReport(health, notices)

    def _recovered(self, notices: Notices) -> None:
        """Firestore answers: the recovery of an outage this process alerted on, told once
        whichever process alerted (`claim_recovery`); a failed send is sent again next check."""
        outage = self._memory.outage()
        if outage is None:
            return
        alerted_at, claimed = outage
        if not claimed:
            w = self._watchdog
            if not claim_recovery(
                self._db, self.collections.health, DOCUMENT, alerted_at, timeout=w.timeout_seconds
            ):
                self._memory.forget()  # another process told it
                return
            self._memory.claimed()
            notices.recovered.append(UNREACHABLE)
        if self._tell(notices, "recovered", [(UNREACHABLE, "Firestore answers again")]):
            self._memory.forget()

    def _tell(self, notices: Notices, state: str, problems: list[tuple[str, str]]) -> bool:
        """Send what the process keeps itself (Firestore's own incident); whether it went."""
        try:
            self._send(state, problems)
        except Exception as exc:  # said in the log and the report
            notices.send_error = str(exc)
            return False
        (notices.alerted if state == "alert" else notices.told_recovered).append(UNREACHABLE)
        return True

    def _log(self, health: Health, notices: Notices) -> None:
        record_check(health.codes, notices.opened)
        messages = {p.code.value: p.message for p in health.problems}
        for code in notices.opened:
            log_event(
                logger,
                logging.ERROR,
                "watchdog.alert",
                f"outbox watchdog: {messages[code]}",
                problem=code,
            )
        for code in notices.recovered:
            log_event(
                logger,
                logging.INFO,
                "watchdog.recovered",
                f"outbox watchdog: {code} recovered",
                problem=code,
            )
        if notices.send_error:
            log_event(
                logger,
                logging.ERROR,
                "watchdog.webhook_failed",
                f"outbox watchdog: {notices.send_error}; sent again by the next check",
            )
        log_event(
            logger,
            logging.INFO,
            "watchdog.check",
            "outbox watchdog: " + ("healthy" if health.ok else ", ".join(sorted(health.codes))),
            problems=sorted(health.codes),
        )

    def _webhook(self, state: str, problems: list[tuple[str, str]]) -> None:
        if self._watchdog.webhook_url is not None:  # WebhookFailed: sent again next check
            post_alert(self._watchdog, state, problems)
