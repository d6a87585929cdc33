from __future__ import annotations

import datetime as dt
import re

import pytest
from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.firestore.limits import (
    check_collection_id,
    document_size,
    json_value_problem,
    value_size,
)


def test_document_size_matches_firestores_documented_example() -> None:
    # The worked example on Firestore's "Storage size calculations" page: 147 bytes.
    data = {
        "type": "Personal",
        "done": False,
        "priority": 1,
        "description": "Learn Cloud Firestore",
    }
    assert document_size("users/jeff/tasks/my_task_id", data) == 147


def test_value_sizes_by_type() -> None:
    assert value_size(None) == 1
    assert value_size(True) == 1
    assert value_size(7) == 8
    assert value_size(1.5) == 8
    assert value_size(dt.datetime.now(dt.timezone.utc)) == 8
    assert value_size(SERVER_TIMESTAMP) == 8
    assert value_size("héllo") == 7
    assert value_size([1, "a"]) == 10
    assert value_size({"ab": 1}) == 11
    with pytest.raises(TypeError):
        value_size(object())


@pytest.mark.parametrize("value", ["", "a/b", ".", "..", "__x__", "é" * 751, None, 3])
def test_bad_collection_ids_are_explained(value: object) -> None:
    assert check_collection_id(value)


@pytest.mark.parametrize("value", ["orders", "outbox-v2", "__x", "é" * 750])
def test_good_collection_ids_pass(value: str) -> None:
    assert check_collection_id(value) is None


def test_json_value_problem_accepts_plain_json() -> None:
    value = {"a": [1, 2.5, "s", None, True, {"b": []}], "c": {}}
    assert json_value_problem(value, "v") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"__name__": 1}, "does not accept as a field name"),
        ({"": 1}, "not a non-empty string"),
        ([[1]], r"v\[0\] is an array directly inside an array"),
        (float("inf"), "finite"),
        (-(2**63) - 1, "64-bit"),
        (b"raw", "bytes"),
        ({1, 2}, "set"),
    ],
)
def test_json_value_problem_names_the_flaw(value: object, message: str) -> None:
    problem = json_value_problem(value, "v")
    assert problem is not None
    assert re.search(message, problem)
