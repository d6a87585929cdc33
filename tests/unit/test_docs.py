"""The README, the docs site's sources, credentials.example and .ci/run must stay true to the code.

What the README held before the docs site (issue 28) is checked where it moved: the variables
on the configuration page generated from `firestore_outbox.config.variables`, the deploy steps
in docs/deploying.md. tests/e2e/test_docs_site.py checks the built site."""

from __future__ import annotations

import re
from pathlib import Path

from firestore_outbox import Configuration
from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.config.variables import VARIABLES
from firestore_outbox.deploy.preview import HIDDEN_VARIABLES
from firestore_outbox.relay.config import NUMBERS as RELAY_NUMBERS

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
    documented = set().union(*(row.variables() for row in VARIABLES))
    for name in variables:
        assert re.search(rf"^#? ?{name}=", example, re.MULTILINE), f"{name} not in example"
        assert name in documented, f"{name} not in firestore_outbox.config.variables"
    # And no row documents a variable nothing reads any more.
    assert documented <= variables, sorted(documented - variables)


def test_every_public_name_has_a_docstring_of_its_own() -> None:
    import firestore_outbox

    for name in firestore_outbox.__all__:
        doc = (getattr(firestore_outbox, name).__doc__ or "").strip()
        # A dataclass without one gets its signature as __doc__: that is not a docstring.
        assert doc and not doc.startswith(f"{name}("), f"firestore_outbox.{name} has no docstring"


def test_the_deploy_page_lists_every_variable_the_deploy_preview_hides() -> None:
    page = (ROOT / "docs" / "deploying.md").read_text()
    step = page[page.index("4. Check what will be deployed") :]
    step = step[: step.index("\n5. ")]
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", step[: step.index("replaced, in `s`")]))
    assert listed - {"HIDDEN_VARIABLES"} == set(HIDDEN_VARIABLES)


def test_the_readme_stays_one_screen_and_points_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), f"README links to a missing page: {link}"


def test_the_configuration_page_gives_the_defaults_the_settings_classes_have() -> None:
    # The page's rows are prose (config/variables.py); the defaults in them are the code's.
    config = load_relay_config({"DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/events"})
    defaults: dict[str, object] = {
        variable: getattr(config, name) for name, (variable, _) in RELAY_NUMBERS.items()
    }
    defaults.update(
        RELAY_PARTITIONS=config.partitions.count,
        RELAY_PARTITIONS_PER_CLAIM=config.partitions.per_claim,
        RELAY_LEASES=config.partitions.leases.value,
        RELAY_FAILED_HEAD=config.partitions.failed_head.value,
        RELAY_FAN_OUT_MAX=config.fan_out.max,
        RELAY_FAN_OUT_EVENTS=config.fan_out.events,
        RELAY_RAMP_RATE=config.ramp.rate,
        RELAY_RAMP_STEP_SECONDS=config.ramp.step_seconds,
    )
    for variable, value in defaults.items():
        [row] = [row for row in VARIABLES if variable in row.variables()]
        shown = f"{value:g}" if isinstance(value, (int, float)) else str(value)
        assert row.default.startswith(f"`{shown}`"), (variable, row.default, shown)
    # The outbox's own collections: named after OUTBOX_COLLECTION unless set.
    collections = Configuration.load({}).collections
    for variable, name, role in (
        ("RELAY_PARTITION_COLLECTION", collections.partitions, "partitions"),
        ("OUTBOX_HEALTH_COLLECTION", collections.health, "health"),
    ):
        [row] = [row for row in VARIABLES if variable in row.variables()]
        assert row.default == f"`{{OUTBOX_COLLECTION}}_{role}` (`{name}`)", (variable, row)


def test_the_readmes_extras_table_names_every_extra() -> None:
    # No tomllib: it is 3.11+ only, and the tests run on 3.10 too.
    project = (ROOT / "pyproject.toml").read_text()
    section = project.split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = set(re.findall(r"^([a-z0-9-]+) = \[", section, re.M))
    table = re.findall(r"^\| (`[^|]+) \|", (ROOT / "README.md").read_text(), re.M)
    listed = {name for row in table for name in re.findall(r"`([a-z0-9-]+)`", row)}
    assert extras and extras - listed == set()
