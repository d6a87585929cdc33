"""Bad re-drive filters and targets: a clear error naming the field, before anything is
read or written."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from firestore_outbox.cli import main
from firestore_outbox.errors import InvalidInput
from firestore_outbox.redrive.reading import Position
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.service import check_rate
from firestore_outbox.redrive.targets import describe, target_for

T = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        ({"since": T, "until": T}, "since must be before until"),
        ({"since": dt.datetime(2026, 11, 1)}, "since must be a timestamp with a time zone"),
        ({"statuses": ("DELIVERED",)}, "status must be one of PENDING"),
        ({"statuses": ()}, "status must name at least one"),
        ({"event_types": ("",)}, "event type must be a non-empty string"),
        ({"aggregate_id": " "}, "aggregate id must be a non-empty string"),
        ({"aggregate_type": "x" * 1501}, "aggregate type must be a non-empty string"),
    ],
)
def test_a_bad_filter_names_its_field(filters: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        Selection(**filters)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://host/x", "target url must be a usable http"),
        ("http:///nohost", "target url must be a usable http"),
        ("https://user:pw@host/x", "no user info, query or fragment"),
        ("https://host/x?token=abc", "no user info, query or fragment"),
    ],
)
def test_a_bad_target_is_refused_and_never_echoed(url: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as refused:
        target_for(url)
    assert "pw" not in str(refused.value) and "token=abc" not in str(refused.value)


def test_a_target_is_stored_as_given_and_listed_by_host() -> None:
    target = target_for("https://consumer.example:8443/hooks/outbox")
    assert target == {"publisher": "http", "url": "https://consumer.example:8443/hooks/outbox"}
    assert describe(target) == "https://consumer.example:8443"
    assert target_for(None) == {"publisher": "configured"}


@pytest.mark.parametrize("rate", [0, -1, float("nan"), float("inf"), True])
def test_a_bad_rate_is_refused(rate: Any) -> None:
    with pytest.raises(InvalidInput, match="rate must be events per second"):
        check_rate(rate)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--since", "yesterday"], "--since must be RFC 3339"),
        (["--until", "2026-11-01T08:00:00"], "--until needs a time zone"),
        (["--since", "2h", "--until", "3h"], "since must be before until"),
        (["--target-url", "https://h/x?key=s3cret"], "no user info, query or fragment"),
    ],
)
def test_the_command_refuses_bad_input_before_reading_anything(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    # Port 9 (discard) answers nothing: a read or a write would fail differently.
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:9")
    monkeypatch.setenv("FIRESTORE_PROJECT_ID", "outbox-test")
    monkeypatch.setenv("DOWNSTREAM_SERVICE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("FIRESTORE_TIMEOUT_SECONDS", "1")
    assert main(["replay", "--dry-run", *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and "s3cret" not in err


def test_a_cursor_written_before_0_7_starts_its_job_again_and_a_new_one_is_read_back() -> None:
    when = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    old = {"partition": 3, "createdAt": when, "sequence": 0, "eventId": "ev-1"}
    assert Position.from_document(old) is None  # walked one partition after another
    new = Position(when, 2, "ev-2")
    assert Position.from_document(new.to_document()) == new
    assert "partition" not in new.to_document()
