"""The middleware in process on the emulator: lost answers, apps without a batch, caps."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import grpc
import pytest
from google.cloud import firestore

from app.api import make_api
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency import IdempotencyConfig, IdempotencyMiddleware, KeyRegistry
from tests.support.faults import faulty_client

pytestmark = pytest.mark.emulator

ORDER = json.dumps({"customerId": "c-1", "items": [{"productId": "s", "quantity": 1}]}).encode()


def call(
    app: Any,
    body: bytes = ORDER,
    key: str | None = '"k-1"',
    path: str = "/orders",
    length: bool = True,
    **extra: str,
) -> tuple[int, dict[str, str], bytes]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(body),
        **extra,
    }
    if length:
        environ["CONTENT_LENGTH"] = str(len(body))
    if key is not None:
        environ["HTTP_IDEMPOTENCY_KEY"] = key
    started: list[Any] = []
    answer = b"".join(app(environ, lambda s, h, e=None: started.extend([s, h])))
    return int(started[0].split()[0]), dict(started[1]), answer


def records(db: firestore.Client) -> list[dict[str, Any]]:
    return [d.to_dict() for d in db.collection("idempotency_keys").stream()]


def test_a_lock_whose_create_answer_was_lost_is_still_ours(
    settings: Settings, db: firestore.Client
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", grpc.StatusCode.UNAVAILABLE, after_call=True)  # the lock's create
    api = make_api(client, settings, IdempotencyConfig())
    status, _, body = call(api)
    assert faults.injected == 1
    assert status == 201, body  # the retried create met its own record, not a 409
    assert len(list(db.collection("orders").stream())) == 1
    assert call(api)[2] == body


def test_a_business_commit_whose_answer_was_lost_keeps_its_stored_answer(
    settings: Settings, db: firestore.Client
) -> None:
    client, faults = faulty_client(settings)

    def lose_the_commit_answer() -> None:
        faults.fail("Commit", grpc.StatusCode.UNAVAILABLE, after_call=True)

    api = make_api(client, settings, IdempotencyConfig(), before_commit=lose_the_commit_answer)
    status, _, body = call(api)
    assert faults.injected == 1 and status == 201, body
    [record] = records(db)
    assert record["status"] == "COMPLETED"
    again = call(make_api(db, settings, IdempotencyConfig()))
    assert (again[0], again[2]) == (201, body)
    assert len(list(db.collection("orders").stream())) == 1


def plain_app(status: str, body: bytes, fail: bool = False) -> Any:
    calls: list[int] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append(1)
        if fail:
            raise RuntimeError("boom")
        start_response(status, [("Content-Type", "text/plain"), ("Set-Cookie", "session=s3cr3t")])
        return [body]

    app.calls = calls  # type: ignore[attr-defined]
    return app


def guard(
    db: firestore.Client, app: Any, tenant_of: Any = None, **config: Any
) -> IdempotencyMiddleware:
    registry = KeyRegistry(db, IdempotencyConfig(**config), timeout=10)
    return IdempotencyMiddleware(app, registry, tenant_of=tenant_of)


def test_an_app_without_a_batch_has_its_success_stored_without_cookies(
    settings: Settings, db: firestore.Client
) -> None:
    app = plain_app("200 OK", b"done")
    guarded = guard(db, app)
    first = call(guarded, path="/jobs")
    assert first[0] == 200 and first[1]["Set-Cookie"] == "session=s3cr3t"
    status, headers, body = call(guarded, path="/jobs")
    assert (status, body) == (200, b"done") and app.calls == [1]
    assert "Set-Cookie" not in headers and headers["Idempotent-Replayed"] == "true"


@pytest.mark.parametrize("fail", [False, True])
def test_a_5xx_or_a_crash_of_the_app_releases_the_key(
    settings: Settings, db: firestore.Client, fail: bool
) -> None:
    app = plain_app("503 Service Unavailable", b"later", fail=fail)
    guarded = guard(db, app)
    status, _, body = call(guarded, path="/jobs")
    assert status in (500, 503)
    if fail:
        assert json.loads(body)["type"] == "/problems/internal-error" and b"boom" not in body
    assert records(db) == []
    call(guarded, path="/jobs")
    assert len(app.calls) == 2  # run again, not replayed


def test_an_answer_over_the_cap_is_not_run_again_and_replays_without_its_body(
    settings: Settings, db: firestore.Client
) -> None:
    app = plain_app("200 OK", b"x" * 100)
    guarded = guard(db, app, max_response_bytes=10)
    assert call(guarded, path="/jobs")[2] == b"x" * 100
    status, headers, body = call(guarded, path="/jobs")
    assert (status, body, headers["Idempotent-Body-Omitted"]) == (200, b"", "true")
    assert app.calls == [1]


@pytest.mark.parametrize("length", [True, False])
def test_a_body_over_the_request_cap_is_413_and_nothing_is_written(
    settings: Settings, db: firestore.Client, length: bool
) -> None:
    app = plain_app("200 OK", b"ok")
    guarded = guard(db, app, max_request_bytes=8)
    status, headers, _ = call(guarded, body=b"0123456789", path="/jobs", length=length)
    assert status == 413 and headers["Content-Type"] == "application/problem+json"
    assert records(db) == [] and app.calls == []


def _text_part(value: bytes) -> bytes:
    return b'--B\r\nContent-Disposition: form-data; name="note"\r\n\r\n' + value + b"\r\n--B--\r\n"


@pytest.mark.parametrize(
    ("content_type", "first", "second"),
    [
        ("application/x-www-form-urlencoded", b"note=caf%E9", b"note=caf%F1"),
        ("multipart/form-data; boundary=B", _text_part(b"caf\xe9"), _text_part(b"caf\xf1")),
    ],
    ids=["form", "multipart"],
)
def test_the_same_key_with_a_form_in_other_latin_1_text_is_422(
    settings: Settings, db: firestore.Client, content_type: str, first: bytes, second: bytes
) -> None:
    app = plain_app("201 Created", b"stored")
    guarded = guard(db, app)
    assert call(guarded, body=first, path="/notes", CONTENT_TYPE=content_type)[0] == 201
    status, _, body = call(guarded, body=second, path="/notes", CONTENT_TYPE=content_type)
    assert status == 422, body  # not the first answer replayed
    assert json.loads(body)["type"] == "/problems/idempotency-key-reused"
    assert app.calls == [1]


def test_keys_can_be_scoped_by_the_authenticated_principal(
    settings: Settings, db: firestore.Client
) -> None:
    app = plain_app("200 OK", b"done")
    guarded = guard(db, app, tenant_of=lambda environ: environ.get("REMOTE_USER"))
    call(guarded, path="/jobs", REMOTE_USER="alice", HTTP_X_TENANT_ID="shared")
    call(guarded, path="/jobs", REMOTE_USER="bob", HTTP_X_TENANT_ID="shared")
    assert len(app.calls) == 2 and len(records(db)) == 2  # the header does not scope them
    status, headers, _ = call(guarded, path="/jobs", REMOTE_USER="alice")
    assert (status, headers["Idempotent-Replayed"], len(app.calls)) == (200, "true", 2)


def test_outcomes_are_counted_in_the_json_logs(
    settings: Settings, db: firestore.Client, caplog: pytest.LogCaptureFixture
) -> None:
    guarded = guard(db, plain_app("200 OK", b"done"))
    with caplog.at_level("DEBUG", logger="firestore_outbox.idempotency"):
        call(guarded, path="/jobs")
        call(guarded, path="/jobs")
        call(guarded, body=b"{}", path="/jobs")
    counted = [r.structured for r in caplog.records if hasattr(r, "structured")]
    assert counted == [
        {"event": "idempotency.hit", "idempotency_hit_total": 1},
        {"event": "idempotency.hit", "idempotency_hit_total": 2},
        {"event": "idempotency.replay", "idempotency_replay_total": 1},
        {"event": "idempotency.hit", "idempotency_hit_total": 3},
        {"event": "idempotency.conflict", "idempotency_conflict_total": 1},
    ]


def test_an_unreachable_registry_is_503_within_the_deadline_and_nothing_is_written(
    settings: Settings, db: firestore.Client
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", grpc.StatusCode.UNAVAILABLE, times=1000)
    api = make_api(client, replace(settings, firestore_timeout_seconds=1.0), IdempotencyConfig())
    status, headers, body = call(api)
    assert status == 503 and headers["Content-Type"] == "application/problem+json"
    assert json.loads(body)["type"] == "/problems/registry-unavailable"
    assert records(db) == [] and list(db.collection("orders").stream()) == []
