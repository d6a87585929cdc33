"""docs/failure-catalog.md stays true: every test it names exists, every row names one, and
every failure the project promises to handle has a row."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "docs" / "failure-catalog.md"
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def table_rows() -> list[str]:
    lines = CATALOG.read_text().splitlines()
    return [
        line
        for line in lines
        if line.startswith("| ") and not line.startswith(("| failure", "| ---"))
    ]


def test_every_test_the_catalog_names_exists() -> None:
    references = REFERENCE.findall(CATALOG.read_text())
    assert len(references) >= 30
    missing = [
        f"{path}::{name}"
        for path, name in references
        if not (ROOT / path).is_file() or name not in defined_tests(ROOT / path)
    ]
    assert not missing, f"the failure catalog names tests that do not exist: {missing}"


def test_every_row_names_the_test_that_proves_it() -> None:
    rows = table_rows()
    assert len(rows) >= 20
    for row in rows:
        proved_by = row.rstrip(" |").rsplit(" | ", 1)[-1]
        assert REFERENCE.search(proved_by), f"no test named in: {row[:80]}"


def test_every_promised_failure_has_a_row() -> None:
    failures = [row.split(" | ")[0].lstrip("| ").lower() for row in table_rows()]
    for promised in (
        "duplicate delivery",
        "crash after leasing",
        "crash after the downstream's 2xx",
        "consumer crash",
        "downstream timeout",
        "downstream 5xx",
        "downstream 4xx",
        "firestore unavailable",
        "poison event",
        "concurrent relays",
        "expired lease",
        "clock skew",
        "out-of-order",
    ):
        assert any(promised in failure for failure in failures), promised
