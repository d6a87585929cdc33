"""What the registry stores of an answer, and what a replay sends back.

Only whitelisted headers are kept: those that describe the representation (type, location,
validators, caching). `Set-Cookie`, `Date`, hop-by-hop and framing headers are never stored:
replaying a session cookie to whoever repeats a key would hand it over, and framing belongs to
each response. A body over the cap is not kept; a repeat then gets the status and headers with
an empty body and `Idempotent-Body-Omitted: true` (the work is not done again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from firestore_outbox.idempotency.crypto import EncryptionKeys

REPLAYED_HEADER = ("Idempotent-Replayed", "true")
OMITTED_HEADER = ("Idempotent-Body-Omitted", "true")
STORED_HEADERS = frozenset(
    {
        "content-type",
        "content-language",
        "content-encoding",
        "location",
        "etag",
        "last-modified",
        "cache-control",
        "expires",
        "vary",
    }
)


@dataclass(frozen=True)
class FrontDoorAnswer:
    """An HTTP answer: status code, headers and body."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @classmethod
    def of(cls, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> FrontDoorAnswer:
        return cls(status, tuple((str(n), str(v)) for n, v in headers), body)

    @property
    def status_line(self) -> str:
        from http import HTTPStatus

        try:
            return f"{self.status} {HTTPStatus(self.status).phrase}"
        except ValueError:
            return str(self.status)


def stored_fields(
    answer: FrontDoorAnswer, record_id: str, max_body: int, keys: EncryptionKeys | None
) -> dict[str, Any]:
    """The `response` map of a completed record."""
    kept = [
        {"name": name, "value": value}
        for name, value in answer.headers
        if name.lower() in STORED_HEADERS
    ]
    fields: dict[str, Any] = {"status": answer.status, "headers": kept}
    if len(answer.body) > max_body:
        fields.update(body=None, bodyOmitted=len(answer.body))
    elif keys is not None:
        fields.update(body=None, sealed=keys.seal(answer.body, record_id))
    else:
        fields.update(body=answer.body)
    return fields


def replayed(
    stored: Mapping[str, Any], record_id: str, keys: EncryptionKeys | None
) -> FrontDoorAnswer:
    """The answer a repeat gets; `AnswerUnreadable` if it is encrypted with no key set."""
    from firestore_outbox.idempotency.crypto import AnswerUnreadable

    headers = [(str(h["name"]), str(h["value"])) for h in stored.get("headers") or []]
    sealed = stored.get("sealed")
    if sealed is not None:
        if keys is None:
            raise AnswerUnreadable("the stored answer is encrypted and no key is set")
        body = keys.open(dict(sealed), record_id)
    else:
        body = bytes(stored.get("body") or b"")
    if stored.get("bodyOmitted"):
        headers.append(OMITTED_HEADER)
    headers.append(REPLAYED_HEADER)
    return FrontDoorAnswer.of(int(stored["status"]), headers, body)
