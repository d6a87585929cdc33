"""The body readers (the receiver's, the ASGI front door's): what a body within the cap may
cost in memory, however the client cuts it up."""

from __future__ import annotations

import asyncio
import io
import tracemalloc
from collections.abc import Callable
from typing import Any

from firestore_outbox.idempotency.asgi import _read_body
from firestore_outbox.idempotency.limits import read_body

CAP = 256 * 1024  # 128 Ki chunks: the default cap (a million) takes 10 s traced


def peak_of(read: Callable[[], bytes | None]) -> tuple[bytes | None, int]:
    tracemalloc.start()
    try:
        body = read()
        return body, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_body_of_tiny_chunks_costs_about_its_size_not_a_multiple() -> None:
    # A client within the cap picks the chunking: 2-byte chunks, each once held as its own
    # bytes object, cost about 60 times the body (131 MB for the default cap of 2 MiB).
    wire = b"2\r\nab\r\n" * (CAP // 2) + b"0\r\n\r\n"
    stream = io.BufferedReader(io.BytesIO(wire))
    body, peak = peak_of(lambda: read_body(stream, None, "chunked", CAP))
    assert body == b"ab" * (CAP // 2)
    assert peak < 3 * CAP, f"peak {peak} bytes for a {CAP}-byte body"


def test_the_asgi_front_door_holds_a_body_of_tiny_messages_in_about_its_size() -> None:
    left = [CAP // 2]  # messages of 2 bytes, the last one says so

    async def receive() -> dict[str, Any]:
        left[0] -= 1
        return {"type": "http.request", "body": b"ab", "more_body": left[0] > 0}

    body, peak = peak_of(lambda: asyncio.run(_read_body(receive, CAP)))
    assert body == b"ab" * (CAP // 2)
    assert peak < 3 * CAP, f"peak {peak} bytes for a {CAP}-byte body"
