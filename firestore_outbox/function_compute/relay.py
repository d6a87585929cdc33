"""The relay as a Function Compute function: `handler` (a timer's, a nudge's or a fan-out's
event), `http_handler` (behind an HTTP trigger: signed nudges) and `initialize`.

Both read the configuration when they run, never at import, so a missing variable is
reported by each invocation instead of crashing every cold start. The relay is built once
per instance and reused while the configuration holds (a warm instance keeps its Firestore
client, its HTTP connections and its lease-mode record).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.warm_relay import WarmRelay
from firestore_outbox.errors import ConfigError, OutboxError
from firestore_outbox.function_compute.nudge_trigger import (
    NudgeGate,
    Refused,
    duplicate,
    http_request,
    ran,
)
from firestore_outbox.nudge.message import ForeignCounts, NudgeRead, read_nudge
from firestore_outbox.observability.logs import configure_logging, log_event
from firestore_outbox.observability.metrics import BacklogGauges, record_nudge_refused
from firestore_outbox.observability.telemetry import configure_telemetry, flush
from firestore_outbox.publishers.rocketmq.client import keep_rocketmq_out_of_home
from firestore_outbox.relay import Relay, RelayConfig
from firestore_outbox.relay.fan_out import is_fan_out
from firestore_outbox.relay.summary import refused_summary

__all__ = ["RelayFunction", "handler", "http_handler", "initialize"]

logger = logging.getLogger("firestore_outbox.relay")

# The wait for a hand-off nudge to be sent (each nudge is bounded by its own 2 s timeout).
HAND_OFF_WAIT_SECONDS = 3.0
_gauges: list[BacklogGauges] = []  # the backlog gauges, registered once per process
_gauges_lock = threading.Lock()


class RelayFunction:
    """A Function Compute relay function: `handler(event, context)`,
    `http_handler(event, context)` and `initialize(context)`, with the relay they share on a
    warm instance. `load` reads the configuration (default:
    the environment over `./.env`, once per invocation)."""

    def __init__(self, load: Callable[[], Configuration] = Configuration.load) -> None:
        self._load = load
        self._warm = WarmRelay()  # the composition root's: built once, kept while it holds
        self._foreign = ForeignCounts()  # producers of another RELAY_PARTITIONS, logged
        self._nudges_seen: Counter[str] = Counter()  # the hand-off nudger's, at the last beat
        self._gate = NudgeGate()  # what http_handler lets through

    @property
    def relay(self) -> Relay | None:
        """The relay a warm instance reuses; None before the first (configured) invocation."""
        return self._warm.relay

    def initialize(self, context: Any) -> None:
        """Warm the Firestore client and the HTTP session before the first timer fires."""
        configuration = self._load()
        configure_logging(configuration.secrets(), thread_exceptions=True)
        keep_rocketmq_out_of_home()  # the function's home is read-only
        try:
            self._warm.get(configuration)
        except OutboxError as exc:  # each invocation reports it again
            log_event(logger, logging.ERROR, "relay.not_configured", f"relay not configured: {exc}")

    def handler(self, event: bytes | str | dict[str, Any] | None, context: Any) -> dict[str, Any]:
        """Drain due outbox events; return (and log) the summary of this invocation."""
        # Every invocation reads the configuration once (the environment and ./.env): the
        # secrets to mask may have changed with it.
        return self._handle(event, context, self._load())

    def http_handler(
        self, event: bytes | str | dict[str, Any] | None, context: Any
    ) -> dict[str, Any]:
        """The relay behind an HTTP trigger (Function Compute 3.0): run the request's signed
        nudge as `handler` runs a nudge and answer an HTTP response (`statusCode`, `headers`,
        `body`): 200 with what ran, or 400, 401, 405, 413, 503 with why not, before anything
        asks Firestore (`firestore_outbox.function_compute.nudge_trigger`). Any other event
        (a timer's, an `InvokeFunction`'s) is `handler`'s: one function may carry both."""
        configuration = self._load()
        configure_logging(configuration.secrets(), thread_exceptions=True)
        try:
            request = http_request(event)
            if request is None:  # a timer's, an invocation's: Function Compute's own callers
                return self._handle(event, context, configuration)
            nudge = self._gate.admit(request, configuration)
        except Refused as exc:
            return exc.answer(getattr(context, "request_id", None))
        if nudge is None:
            return duplicate()
        return ran(self._handle(nudge, context, configuration))

    def _handle(self, event: Any, context: Any, configuration: Configuration) -> dict[str, Any]:
        try:
            return self._invoke(event, context, configuration)
        finally:
            # Function Compute may freeze the instance once the handler returns: what the
            # exporters hold must be sent now, not by a background thread that never wakes.
            flush()

    def _invoke(self, event: Any, context: Any, configuration: Configuration) -> dict[str, Any]:
        started = time.monotonic()
        configure_logging(configuration.secrets(), thread_exceptions=True)
        keep_rocketmq_out_of_home()
        try:
            exporting = configure_telemetry(configuration.environ)
        except ConfigError as exc:  # delivering matters more than tracing it: say so, go on
            exporting = False
            log_event(logger, logging.ERROR, "relay.telemetry_not_configured", str(exc))
        trigger = _trigger(event)
        request_id = getattr(context, "request_id", None)
        try:
            relay = self._warm.get(configuration)
            if exporting:
                self._register_gauges()
        except OutboxError as exc:
            summary: dict[str, Any] = {
                "status": "error",
                "error": str(exc),
                **dict.fromkeys(("processed", "failed", "retried", "reclaimed"), 0),
                "durationMs": round((time.monotonic() - started) * 1000),
            }
            log_event(logger, logging.ERROR, "relay.not_configured", f"relay not configured: {exc}")
        else:
            nudge = read_nudge(trigger, relay.config.partitions.count)
            summary = self._run(relay, nudge, trigger, context, request_id, configuration)
            if nudge is None and not is_fan_out(trigger) and summary.get("status") == "ok":
                # a timer's run that went well: re-drive jobs in the time it left
                budget = _time_budget(context, relay.config)[0] or relay.config.time_budget_seconds
                left = budget - (time.monotonic() - started)
                summary["redrive"] = self._warm.run_redrive(relay, configuration, left, request_id)
        summary.update(requestId=request_id, trigger=trigger.get("triggerName"))
        log_event(logger, logging.INFO, "relay.summary", "relay summary", **summary)
        return summary

    def _run(
        self,
        relay: Relay,
        nudge: NudgeRead | None,
        trigger: dict[str, Any],
        context: Any,
        request_id: str | None,
        configuration: Configuration,
    ) -> dict[str, Any]:
        """One run: a timer's, or a producer's nudge of its partitions only. A nudge's
        refused entries are counted and said (`nudgeRefused`, `nudgeRefusal`); one with no
        partition left runs nothing and asks Firestore nothing."""
        if nudge is not None and nudge.refused:
            record_nudge_refused(nudge.refused)
            self._foreign.saw(nudge, relay.config.partitions.count)
            if not nudge.partitions:
                summary = refused_summary(request_id).to_json()
                summary.update(nudged=[], nudgeRefused=nudge.refused, nudgeRefusal=nudge.reason)
                return summary
        nudged = None if nudge is None else nudge.partitions
        # What a nudged run's re-check finds goes to a new invocation (a nudge).
        hand_off = None if nudged is None else self._warm.hand_off(relay, configuration)
        budget, source = _time_budget(context, relay.config)
        summary = relay.run(
            time_budget=budget,
            budget_source=source,
            instance_id=request_id,
            fan_out=not is_fan_out(trigger) and nudged is None,  # neither starts more
            partitions=nudged,
            hand_off=None if hand_off is None else hand_off.nudge,
        ).to_json()
        if nudge is not None:
            summary["nudged"] = nudged
            if nudge.refused:
                summary.update(nudgeRefused=nudge.refused, nudgeRefusal=nudge.reason)
        if summary.get("handedOff") and hand_off is not None:
            # sent before the handler returns: Function Compute may freeze the instance then
            hand_off.wait_idle(HAND_OFF_WAIT_SECONDS)
        if hand_off is not None:  # the next heartbeat says how the hand-offs went
            counts, seen = hand_off.counts, self._nudges_seen
            relay.heartbeat.count_nudges(
                counts["sent"] - seen["sent"], counts["failed"] - seen["failed"]
            )
            self._nudges_seen = counts
        return summary

    def _register_gauges(self) -> None:
        """The backlog gauges, once per process. Their callbacks run only when the metrics are
        collected (the flush before the handler returns, or the export interval), never during
        the run: one reading (six aggregation queries within the Firestore deadline) per
        collection; a reading that fails or runs out of time is a gap in the series."""
        with _gauges_lock:
            if not _gauges:
                _gauges.append(BacklogGauges(self._warm.backlog))


def _trigger(event: bytes | str | dict[str, Any] | None) -> dict[str, Any]:
    """The timer event (`triggerTime`, `triggerName`, `payload`); the relay needs none of it."""
    if isinstance(event, dict):
        return event
    if isinstance(event, bytes):
        event = event.decode("utf-8", "replace")
    if not event or not event.strip():
        return {}
    try:
        parsed = json.loads(event)
    except ValueError:
        logger.warning("ignoring an event that is not JSON (%d characters)", len(event))
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _time_budget(context: Any, config: RelayConfig) -> tuple[float | None, str | None]:
    """Seconds this invocation may spend: the function's timeout less room for the last
    Firestore write, when Function Compute tells us the timeout; and how it was reckoned
    (named in the summary when it cannot fit one attempt)."""
    timeout = getattr(getattr(context, "function", None), "timeout", None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        firestore = config.firestore_timeout_seconds
        source = (
            f"the function's timeout ({timeout:g} s) less RELAY_FIRESTORE_TIMEOUT_SECONDS "
            f"({firestore:g} s) and 1 s"
        )
        return max(0.0, float(timeout) - firestore - 1.0), source
    return None, None


_default = RelayFunction()
handler = _default.handler
http_handler = _default.http_handler
initialize = _default.initialize
