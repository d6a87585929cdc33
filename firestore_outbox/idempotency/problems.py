"""RFC 9457 problem details (`application/problem+json`) for every refusal of the front door."""

from __future__ import annotations

import json
from collections.abc import Iterable

from firestore_outbox.idempotency.answers import FrontDoorAnswer

PROBLEM_TYPE = "application/problem+json"


def problem(
    status: int,
    slug: str,
    title: str,
    detail: str,
    headers: Iterable[tuple[str, str]] = (),
) -> FrontDoorAnswer:
    """A problem answer; `type` is a relative URI naming the problem (RFC 9457 section 3.1.1)."""
    body = {"type": f"/problems/{slug}", "title": title, "status": status, "detail": detail}
    encoded = json.dumps(body, ensure_ascii=False).encode()
    return FrontDoorAnswer.of(status, [("Content-Type", PROBLEM_TYPE), *headers], encoded)
