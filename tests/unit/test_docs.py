"""The README, credentials.example and .ci/run must stay true to the code."""

from __future__ import annotations

import re
from pathlib import Path

from function_compute.preview import HIDDEN_VARIABLES

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if line.startswith("python3")]


def variables_read_by_the_code() -> set[str]:
    names = set()
    for package in ("firestore_outbox", "app", "function_compute"):
        names |= variables_read_by(ROOT / package)
    return names


def variables_read_by(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        text = path.read_text()
        names |= set(re.findall(r'get\("([A-Z][A-Z0-9_]+)"\)', text))
        names |= set(re.findall(r'_ENV = "([A-Z][A-Z0-9_]+)"', text))
        names |= set(re.findall(r'\("([A-Z][A-Z0-9_]+)", (?:parse_whole|parse_seconds)\)', text))
    return names


def test_ci_runs_the_readme_test_command() -> None:
    demo, tests = readme_commands()
    assert "outbox demo" in demo and "pytest" in tests
    assert tests in (ROOT / ".ci" / "run").read_text()


def test_every_variable_the_code_reads_is_documented() -> None:
    variables = variables_read_by_the_code()
    assert {"FIRESTORE_PROJECT_ID", "FIRESTORE_CREDENTIALS_JSON", "LOG_LEVEL"} <= variables
    assert {"DOWNSTREAM_SERVICE_URL", "RELAY_MAX_ATTEMPTS", "RELAY_EVENT_SOURCE"} <= variables
    example = (ROOT / "credentials.example").read_text()
    readme = (ROOT / "README.md").read_text()
    for name in variables:
        assert re.search(rf"^#? ?{name}=", example, re.MULTILINE), f"{name} not in example"
        assert f"`{name}`" in readme or f"{name}`" in readme, f"{name} not in README"


def test_the_readme_lists_every_variable_the_deploy_preview_hides() -> None:
    readme = (ROOT / "README.md").read_text()
    step = readme[readme.index("4. Check what will be deployed") :]
    step = step[: step.index("\n5. ")]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", step[: step.index("replaced, in `s`")]))
    assert listed - {"HIDDEN_VARIABLES"} == set(HIDDEN_VARIABLES)
