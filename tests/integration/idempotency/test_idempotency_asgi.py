"""The ASGI adapter under uvicorn (a real ASGI server), through real HTTP, on the emulator."""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import uvicorn
from google.cloud import firestore

from firestore_outbox.idempotency import IdempotencyConfig, KeyRegistry
from firestore_outbox.idempotency.asgi import IdempotencyASGIMiddleware

pytestmark = pytest.mark.emulator


class Jobs:
    """An ASGI app that starts a "job" per POST (no Firestore writes of its own)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        self.calls += 1
        body = json.loads(message["body"] or b"{}")
        status = 500 if body.get("fail") else 201
        answer = json.dumps({"job": uuid.uuid4().hex, "echo": body}).encode()
        headers = [(b"content-type", b"application/json"), (b"set-cookie", b"s=secret")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


@pytest.fixture
def served(db: firestore.Client) -> Iterator[tuple[str, Jobs]]:
    jobs = Jobs()
    registry = KeyRegistry(db, IdempotencyConfig(), timeout=10)
    app = IdempotencyASGIMiddleware(jobs, registry, required=frozenset({("POST", "/jobs")}))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            threading.Event().wait(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", jobs
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def post(url: str, body: object, key: str | None) -> requests.Response:
    headers = {"Idempotency-Key": key} if key else {}
    return requests.post(f"{url}/jobs", json=body, headers=headers, timeout=30)


def test_asgi_first_replay_mismatch_and_missing_key(served: tuple[str, Jobs]) -> None:
    url, jobs = served
    first = post(url, {"n": 1}, '"a-1"')
    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    again = post(url, {"n": 1}, '"a-1"')
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert "set-cookie" not in again.headers
    assert post(url, {"n": 2}, '"a-1"').status_code == 422
    missing = post(url, {"n": 1}, None)
    assert missing.status_code == 400
    assert missing.headers["content-type"] == "application/problem+json"
    assert jobs.calls == 1


def test_asgi_a_5xx_releases_the_key(served: tuple[str, Jobs], db: firestore.Client) -> None:
    url, jobs = served
    assert post(url, {"fail": True}, '"a-2"').status_code == 500
    assert list(db.collection("idempotency_keys").stream()) == []
    assert post(url, {"fail": True}, '"a-2"').status_code == 500
    assert jobs.calls == 2
