"""The incidents' states from one check to the next (`incidents._next`): what opens, what
recovers, what is told once, what is dropped."""

from __future__ import annotations

from typing import Any

from firestore_outbox.health.incidents import _next


def record(state: str, notified: bool) -> dict[str, Any]:
    return {"message": "m", "since": "t", "state": state, "notified": notified}


def test_a_new_problem_opens_untold_and_a_known_one_is_left_alone() -> None:
    after, notices = _next({"b": record("open", True)}, {"a": "new", "b": "still"})
    assert (after["a"]["state"], after["a"]["notified"]) == ("open", False)
    assert after["b"] == record("open", True)
    assert (notices.opened, notices.recovered) == (["a"], [])


def test_a_told_problem_that_ends_recovers_untold_then_is_dropped_once_told() -> None:
    after, notices = _next({"a": record("open", True)}, {})
    assert after == {"a": record("recovered", False)} and notices.recovered == ["a"]
    after, _ = _next({"a": record("recovered", True)}, {})
    assert after == {}


def test_an_alert_never_sent_gets_no_recovery() -> None:
    after, notices = _next({"a": record("open", False)}, {})
    assert after == {} and notices.recovered == []


def test_a_problem_back_before_its_recovery_was_told_is_open_and_already_alerted() -> None:
    after, notices = _next({"a": record("recovered", False)}, {"a": "again"})
    assert after["a"]["state"] == "open" and after["a"]["notified"] is True
    assert notices.opened == []
