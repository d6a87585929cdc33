"""Exponential backoff with full jitter: an event's next attempt (`backoff_delay`, never
below the base, never above the cap), and the pause before a failed Firestore call is sent
again (`backoff_pause`)."""

from __future__ import annotations

import random


def backoff_delay(
    attempts: int,
    *,
    base: float,
    cap: float,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before the next attempt, after `attempts` attempts have failed.

    The ceiling doubles with every attempt (`base * 2**attempts`, at most `cap`) and the delay
    is drawn uniformly below it, so relays retrying together spread out; it is at least `base`
    so a failing downstream is never hammered. A downstream's `Retry-After` is honoured up to
    `cap`.
    """
    ceiling = min(cap, base * 2 ** min(max(attempts, 0), 62))
    delay = max(base, (rng or random).uniform(0, ceiling))
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(retry_after, cap))
    return delay


def backoff_pause(attempt: int, rng: random.Random) -> float:
    """Full-jitter pause before retry `attempt`: below 0.1 s doubling, at most 2 s."""
    return rng.uniform(0, min(2.0, 0.1 * 2 ** (attempt - 1)))
