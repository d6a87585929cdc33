"""`outbox api` and `receiver` name an application by an import string, found in the current
directory as uvicorn does; without one they serve the example that ships with the library."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from firestore_outbox.cli.reference import load
from firestore_outbox.errors import ConfigError


def test_a_module_of_the_current_directory_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "shop_api_for_test.py").write_text("def make_api(*args):\n    return 'wsgi'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load("shop_api_for_test:make_api", "--app")() == "wsgi"


@pytest.mark.parametrize("spec", ["app.api", ":make_api", "app.api:"])
def test_a_malformed_target_names_the_option(spec: str) -> None:
    with pytest.raises(ConfigError, match="--app must be MODULE:ATTRIBUTE"):
        load(spec, "--app")


def test_a_missing_module_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="Pass --app MODULE:ATTRIBUTE naming a module that is"):
        load("no_such_package_here.api:make_api", "--app")
    with pytest.raises(ConfigError, match="has no 'nope'"):
        load("firestore_outbox.errors:nope", "--app")


def test_the_defaults_are_the_example_that_ships_with_the_library() -> None:
    from firestore_outbox.cli.api import DEFAULT_APP
    from firestore_outbox.cli.receiver import DEFAULT_CONSUMER
    from firestore_outbox.example import OrderCounter, make_api

    assert not DEFAULT_APP.startswith("app.") and load(DEFAULT_APP, "--app") is make_api
    assert load(DEFAULT_CONSUMER, "--consumer") is OrderCounter
