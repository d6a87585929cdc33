"""Reading a downstream's answer within bounds: at most `MAX_ANSWER_BYTES` of its body, and
no more than an excerpt of a compressed one, however much it claims to hold."""

from __future__ import annotations

import http.client
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
    return _answer(response.status, response.headers, raw, whole)


def read_plain_answer(response: http.client.HTTPResponse) -> tuple[Answer, bool]:
    """Read an http.client `response` up to the cap; also whether its connection may carry
    the next request (the answer read whole, and the downstream not closing it)."""
    whole, raw = False, b""
    if response.status >= 200:  # a 101 that reached us: as in `read_answer`
        raw = response.read(MAX_ANSWER_BYTES + 1)
        whole = len(raw) <= MAX_ANSWER_BYTES
    reusable = whole and response.isclosed() and not response.will_close
    if not reusable:
        response.close()
    headers = urllib3.HTTPHeaderDict(response.getheaders())
    return _answer(response.status, headers, raw, whole), reusable


def _answer(status: int, headers: urllib3.HTTPHeaderDict, raw: bytes, whole: bool) -> Answer:
    encoding = headers.get("Content-Encoding", "").strip().lower()
    return Answer(status, headers, _excerpt(raw, encoding), raw if whole else b"")


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
