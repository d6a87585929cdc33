"""The key's lock through real server processes: in progress, a killed holder, a lost lock."""

from __future__ import annotations

import datetime as dt
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from google.cloud import firestore

from firestore_outbox.firestore.settings import Settings
from tests.support.api_servers import api_server

pytestmark = pytest.mark.emulator

ORDER = {"customerId": "c-1", "items": [{"productId": "sku-1", "quantity": 2}]}


def post(url: str, key: str) -> requests.Response:
    return requests.post(f"{url}/orders", json=ORDER, headers={"Idempotency-Key": key}, timeout=60)


def wait_for(path: Path, timeout: float = 30.0) -> None:
    ends = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < ends, f"{path.name} never appeared"
        time.sleep(0.02)


def documents(db: firestore.Client, collection: str) -> list[dict]:  # type: ignore[type-arg]
    return [d.to_dict() for d in db.collection(collection).stream()]


def hooks(tmp_path: Path) -> dict[str, str]:
    hold = tmp_path / "hold"
    hold.touch()
    return {"API_TEST_HOLD": str(hold), "API_TEST_ENTERED": str(tmp_path / "entered")}


def test_a_repeat_while_the_first_runs_is_409_with_retry_after_then_replays(
    settings: Settings, db: firestore.Client, unique: str, tmp_path: Path
) -> None:
    variables = hooks(tmp_path)
    key = f'"{unique}"'
    with api_server(settings, hooked=True, **variables) as server, ThreadPoolExecutor(1) as pool:
        first = pool.submit(post, server.url, key)
        wait_for(tmp_path / "entered")
        busy = post(server.url, key)
        assert busy.status_code == 409
        assert busy.headers["Retry-After"] == "1"
        assert busy.headers["Content-Type"] == "application/problem+json"
        assert documents(db, "orders") == []
        Path(variables["API_TEST_HOLD"]).unlink()
        done = first.result(timeout=60)
        assert done.status_code == 201
        again = post(server.url, key)
    assert again.content == done.content and again.headers["Idempotent-Replayed"] == "true"
    assert len(documents(db, "orders")) == 1


def test_a_server_killed_between_lock_and_commit_is_taken_over_after_the_bound(
    settings: Settings, db: firestore.Client, unique: str, tmp_path: Path
) -> None:
    variables = {**hooks(tmp_path), "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS": "2"}
    key = f'"{unique}"'
    with api_server(settings, hooked=True, **variables) as doomed, ThreadPoolExecutor(1) as pool:
        pending = pool.submit(post, doomed.url, key)
        wait_for(tmp_path / "entered")
        doomed.kill()  # SIGKILL: the lock is written, the business batch never sent
        with pytest.raises(requests.ConnectionError):
            pending.result(timeout=60)
    [record] = documents(db, "idempotency_keys")
    assert record["status"] == "PROCESSING"
    assert documents(db, "orders") == [] and documents(db, "outbox") == []
    # Within the bound the lock holds: a server whose bound is far from passed refuses (a
    # 2 s bound could pass while a loaded machine starts the server, and prove nothing).
    with api_server(settings, IDEMPOTENCY_LOCK_TIMEOUT_SECONDS="600") as patient:
        early = post(patient.url, key)
        assert early.status_code == 409  # the bound has not passed on Firestore's clock
    with api_server(settings, IDEMPOTENCY_LOCK_TIMEOUT_SECONDS="2") as server:
        locked_at: dt.datetime = record["lockedAt"]
        time.sleep(
            max(
                0.0,
                (
                    locked_at + dt.timedelta(seconds=2.2) - dt.datetime.now(dt.timezone.utc)
                ).total_seconds(),
            )
        )
        with ThreadPoolExecutor(8) as retries:  # several retries race for the dead lock
            answers = list(retries.map(lambda _: post(server.url, key), range(8)))
        firsts = [
            a for a in answers if a.status_code == 201 and "Idempotent-Replayed" not in a.headers
        ]
        assert len(firsts) == 1, [a.status_code for a in answers]
        assert {a.status_code for a in answers} <= {201, 409}
        assert post(server.url, key).content == firsts[0].content
    assert len(documents(db, "orders")) == 1 and len(documents(db, "outbox")) == 1


def test_a_holder_whose_lock_was_taken_over_cannot_commit(
    settings: Settings, db: firestore.Client, unique: str, tmp_path: Path
) -> None:
    variables = {**hooks(tmp_path), "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS": "1"}
    key = f'"{unique}"'
    with api_server(settings, hooked=True, **variables) as server, ThreadPoolExecutor(1) as pool:
        slow = pool.submit(post, server.url, key)
        wait_for(tmp_path / "entered")
        time.sleep(1.5)  # past the lock bound: the next request takes the lock over
        taker = post(server.url, key)
        assert taker.status_code == 201, taker.text
        Path(variables["API_TEST_HOLD"]).unlink()
        late = slow.result(timeout=60)
    assert late.status_code == 409, late.text  # its batch, order and event, was refused whole
    assert late.headers["Retry-After"] == "1"
    orders = documents(db, "orders")
    assert len(orders) == 1 and len(documents(db, "outbox")) == 1
    [record] = documents(db, "idempotency_keys")
    assert record["status"] == "COMPLETED"
