"""The receiver's body reader: what a body within the cap may cost in memory."""

from __future__ import annotations

import io
import tracemalloc

from app.request_limits import read_body

CAP = 256 * 1024  # 128 Ki chunks: the default cap (a million) takes 10 s traced


def test_a_body_of_tiny_chunks_costs_about_its_size_not_a_multiple() -> None:
    # A client within the cap picks the chunking: 2-byte chunks, each once held as its own
    # bytes object, cost about 60 times the body (131 MB for the default cap of 2 MiB).
    wire = b"2\r\nab\r\n" * (CAP // 2) + b"0\r\n\r\n"
    stream = io.BufferedReader(io.BytesIO(wire))
    tracemalloc.start()
    try:
        body = read_body(stream, None, "chunked", CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert body == b"ab" * (CAP // 2)
    assert peak < 3 * CAP, f"peak {peak} bytes for a {len(body)}-byte body"
