"""Reading a downstream's answer within bounds: at most `MAX_ANSWER_BYTES` of its body, and
no more than an excerpt of a compressed one, however much it claims to hold."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import urllib3

# Answers up to this size are read whole, so their keep-alive connection can carry the next
# delivery; a longer one is cut here and its connection dropped (never reused half-read).
MAX_ANSWER_BYTES = 64 * 1024
EXCERPT_CHARACTERS = 200


@dataclass(frozen=True)
class Answer:
    """A downstream's answer as the classifiers see it: status, headers, a body excerpt."""

    status: int
    headers: urllib3.HTTPHeaderDict
    excerpt: str
    # The body as read (empty when it was over `MAX_ANSWER_BYTES`), for a target whose answer
    # says more than a status does: one result per entry of a batch.
    body: bytes = b""


def read_answer(response: urllib3.BaseHTTPResponse) -> Answer:
    """Read `response` (opened with `preload_content=False`) up to the cap, then hand its
    connection back to the pool when the answer was read whole, or close it."""
    whole, raw = False, b""
    try:
        # A 1xx that reached us (101) ends HTTP on the connection: read nothing, reuse never.
        # (Checked first: urllib3 hands a connection back by itself once a body is read.)
        if response.status >= 200:
            raw = response.read(MAX_ANSWER_BYTES + 1, decode_content=False)
            whole = len(raw) <= MAX_ANSWER_BYTES
    finally:
        if not whole:
            response.close()
        response.release_conn()
    encoding = response.headers.get("Content-Encoding", "").strip().lower()
    body = raw if whole else b""
    return Answer(response.status, response.headers, _excerpt(raw, encoding), body)


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
