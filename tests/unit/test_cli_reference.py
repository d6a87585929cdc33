"""`outbox api`, `demo` and `receiver` name the reference application by an import string,
found in the current directory as uvicorn does; the library itself never imports `app`."""

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


def test_a_missing_module_says_where_the_reference_application_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="run this from the root of a checkout, or name your"):
        load("no_such_package_here.api:make_api", "--app")
    with pytest.raises(ConfigError, match="has no 'nope'"):
        load("firestore_outbox.errors:nope", "--app")
