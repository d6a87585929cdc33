"""CPU time spent in the relay's per-attempt telemetry, measured inside a real relay process.

`account()` wraps the calls the relay makes for each delivery attempt (`PublishSpans.span`,
entering and leaving its span, `record_outcome`, `AttemptMetrics.record`) so that each adds
the CPU time of its own thread (`time.thread_time`) to one total. Measured in the relay that
is being benchmarked, beside that process's CPU time, the share is free of what makes two
relay runs differ on a shared machine (the emulator's pace, other processes): both figures
come from the same run.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import firestore_outbox.relay.publish.attempts as attempts
from firestore_outbox.observability import attempt_metrics, publish_spans


class Account:
    """The CPU seconds spent in the wrapped calls, across threads, by call. Each thread adds
    to totals of its own (no lock shared by the relay's publishing threads, which would make
    them wait on one another and cost the relay more than it does unmeasured)."""

    def __init__(self) -> None:
        self._mine = threading.local()
        self._totals: list[dict[str, float]] = []  # one per thread; appended under the GIL

    @property
    def seconds(self) -> float:
        """The sum so far."""
        return sum(self.by_call().values())

    def by_call(self) -> dict[str, float]:
        """The sums so far, by wrapped call (its qualified name)."""
        sums: dict[str, float] = {}
        for totals in list(self._totals):
            for name, spent in list(totals.items()):
                sums[name] = sums.get(name, 0.0) + spent
        return sums

    def _totals_of_thread(self) -> dict[str, float]:
        totals = getattr(self._mine, "totals", None)
        if totals is None:
            totals = self._mine.totals = {}
            self._totals.append(totals)
        return totals

    def timed(self, call: Callable[..., Any]) -> Callable[..., Any]:
        name = call.__qualname__

        @functools.wraps(call)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                totals = self._totals_of_thread()
                totals[name] = totals.get(name, 0.0) + spent

        return wrapper


def account() -> Account:
    """Start accounting (once per process); the `Account` fills as the relay runs."""
    total = Account()
    spans = publish_spans._Attempt  # the span's context manager, entered and left per attempt
    for owner, name in (
        (publish_spans.PublishSpans, "span"),
        (spans, "__enter__"),
        (spans, "__exit__"),
        (attempt_metrics.AttemptMetrics, "record"),
    ):
        setattr(owner, name, total.timed(getattr(owner, name)))
    attempts.record_outcome = total.timed(attempts.record_outcome)  # type: ignore[attr-defined]
    return total
