"""Reading a downstream's answer within bounds: at most `MAX_ANSWER_BYTES` of its body, and
no more than an excerpt of a compressed one, however much it claims to hold."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

# Answers up to this size are read whole, so their keep-alive connection can carry the next
# delivery; a longer one is cut here and its connection dropped (never reused half-read).
MAX_ANSWER_BYTES = 64 * 1024
EXCERPT_CHARACTERS = 200


class Headers:
    """An answer's header fields, read from its head's lines when first asked for (most
    answers are settled by their status alone); `get` takes a name in any case, and a field
    sent more than once comes joined with `, `, as RFC 9110 allows."""

    __slots__ = ("_fields", "_lines")

    def __init__(self, lines: list[bytes] | None = None) -> None:
        self._lines = lines or []
        self._fields: dict[str, str] | None = None

    def get(self, name: str, default: str | None = None) -> str | None:
        if self._fields is None:
            self._fields = _fields(self._lines)
        return self._fields.get(name.lower(), default)


def _fields(lines: list[bytes]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(b":")
        if colon:
            key, text = name.strip().lower().decode("latin-1"), value.strip().decode("latin-1")
            fields[key] = f"{fields[key]}, {text}" if key in fields else text
    return fields


@dataclass(frozen=True)
class DownstreamAnswer:
    """A downstream's answer as the classifiers see it: status, headers, a body excerpt."""

    status: int
    headers: Headers = field(default_factory=Headers)
    excerpt: str = ""
    # The body as read (empty when it was over `MAX_ANSWER_BYTES`), for a target whose answer
    # says more than a status does: one result per entry of a batch.
    body: bytes = b""


def answer_of(status: int, headers: Headers, raw: bytes, whole: bool) -> DownstreamAnswer:
    """The `DownstreamAnswer` for `raw`, the first bytes of the body (all of them when `whole`)."""
    if not raw:
        return DownstreamAnswer(status, headers)
    encoding = (headers.get("content-encoding") or "").strip().lower()
    return DownstreamAnswer(status, headers, _excerpt(raw, encoding), raw if whole else b"")


def _excerpt(raw: bytes, encoding: str) -> str:
    if encoding in ("gzip", "x-gzip", "deflate"):
        raw = _inflate(raw, encoding)
    text = raw[: EXCERPT_CHARACTERS * 4].decode("utf-8", "replace")[:EXCERPT_CHARACTERS]
    # Control characters (a binary body's NULs) would only garble `lastError` and the logs.
    return "".join(c if c.isprintable() or c.isspace() else "?" for c in text).strip()


def _inflate(raw: bytes, encoding: str) -> bytes:
    """At most an excerpt's worth of inflated bytes: a small body may inflate to gigabytes."""
    limit = EXCERPT_CHARACTERS * 4
    # gzip or zlib framing (detected), or for `deflate` also the raw stream some servers send.
    for wbits in (zlib.MAX_WBITS | 32, -zlib.MAX_WBITS):
        try:
            return zlib.decompressobj(wbits).decompress(raw, limit)
        except zlib.error:
            if encoding != "deflate":
                break
    return b""
