"""A team deploys from a repository of its own with nothing but the wheel: a fresh virtual
environment with the wheel installed, a repository outside this checkout with its own `app`
package, `outbox fc init`, `outbox fc build` (for Function Compute's python3.10, as `s deploy`
runs it), `outbox fc preview`; then the built package's handlers, imported in a clean
interpreter, are invoked the way Function Compute invokes them, against the emulator,
delivering to a local receiver: the timer's relay, the watchdog, and the HTTP-triggered relay
(`--nudge http`) with a signed nudge, a forged one and a signed one whose body was changed.

Before, the working build recipe, the preview, s.yaml and the Firestore files existed only in
this repository: a team's build stopped at `No matching distribution found for aliyun-fc2`.

The repository is initialised and built once for the module (one build: its time is printed
with `-s`). Each case invokes one entry point of the package with `invoke`: adding a case is
one more test calling it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.deploy.checks import python310
from firestore_outbox.firestore.settings import Settings
from tests.e2e.function_compute.test_deploy import wheel_tags
from tests.e2e.function_compute.test_deploy_preview import serverless_devs
from tests.integration.function_compute.test_http_handler import (
    SECRET,
    altered,
    captured,
    event_of,
    forged,
)
from tests.support.helpers import assert_each_processed_once
from tests.support.helpers import outbox as stored

# What the team runs first; `--nudge http` adds the HTTP-triggered relay to index.py and s.yaml.
INIT = ["fc", "init", "--nudge", "http"]
TIMER_EVENT = {"triggerTime": "2026-12-01T08:00:00Z", "triggerName": "relay-timer", "payload": ""}
# The team's own code, as docs/concepts/your-aggregates.md builds it: an invoice repository
# hung on a unit of work of its own; an invoice and its event committed together, on the
# public names only.
BILLING = '''"""Billing: an invoice and its InvoiceIssued event in one commit."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from firestore_outbox import FirestoreUnitOfWork, get_db_client
from firestore_outbox.producer import Repository


class InvoiceRepository(Repository):
    def add(self, invoice: Mapping[str, Any], uow: FirestoreUnitOfWork | None = None) -> str:
        ref = self.document(invoice["number"], what="invoice number")
        self.unit_of_work(uow).add_create(ref, dict(invoice))
        return str(ref.id)


class BillingUnitOfWork(FirestoreUnitOfWork):
    def __init__(self, db: Any, settings: Any = None, **options: Any) -> None:
        super().__init__(db, settings, **options)
        self.invoices = InvoiceRepository(db, "invoices", uow=self)


def bill(customer_id: str, amount: int) -> str:
    with BillingUnitOfWork(get_db_client()) as uow:
        invoice = {"number": f"INV-{uuid.uuid4().hex[:8]}", "customerId": customer_id}
        number = uow.invoices.add({**invoice, "amount": amount})
        return uow.outbox.add(
            {
                "eventType": "InvoiceIssued",
                "aggregateType": "invoice",
                "aggregateId": number,
                "payload": {"amount": amount},
            }
        )
'''
TEAM_FILES = {
    "app/__init__.py": "",
    "app/billing.py": BILLING,
    # Never the function's code: the team's tests, docs and virtual environment.
    "tests/test_billing.py": "def test_nothing() -> None:\n    pass\n",
    "docs/index.md": "# Billing\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
}
# Function Compute's python runtime, reduced: a clean interpreter (no site-packages, no user
# site, PYTHONPATH ignored), the code directory and its python/ first on sys.path, the
# initializer (when given) and the entry point called with the event's bytes and a context.
INVOKE = """
import importlib, json, sys, types
code, dependencies, entry, initializer, event = sys.argv[1:6]
sys.path[:0] = [code, dependencies]
def function(name):
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)
context = types.SimpleNamespace(
    request_id="fc-team-1", function=types.SimpleNamespace(timeout=90), credentials=None
)
if initializer != "-":
    function(initializer)(context)
print(json.dumps(function(entry)(event.encode(), context)))
"""


@dataclass(frozen=True)
class Team:
    """The team's repository, its virtual environment, and what init and build printed."""

    repository: Path
    venv: Path
    init: str
    build: str
    build_seconds: float

    @property
    def package(self) -> Path:
        return self.repository / "build" / "fc"


def environment(venv: Path, **variables: str) -> dict[str, str]:
    """This process's environment without its outbox settings, `venv` first on PATH."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FIRESTORE_", "OUTBOX_", "RELAY_", "PYTHON", "VIRTUAL_ENV"))
    }
    return {**kept, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}", **variables}


def outbox(
    venv: Path, repository: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`outbox ARGS` as the team runs it: its venv's, in its repository."""
    done = subprocess.run(
        [str(venv / "bin" / "outbox"), *args],
        cwd=repository,
        env=environment(venv, **env),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def team(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Team:
    repository = tmp_path_factory.mktemp("team") / "billing"
    for name, text in TEAM_FILES.items():
        (repository / name).parent.mkdir(parents=True, exist_ok=True)
        (repository / name).write_text(text)
    init = outbox(installed, repository, *INIT)
    started = time.monotonic()
    build = outbox(installed, repository, "fc", "build")
    seconds = time.monotonic() - started
    print(f"\noutbox fc build of the team's repository: {seconds:.1f} s")
    return Team(repository, installed, init.stdout, build.stdout, seconds)


def invoke(
    team: Team, entry: str, event: dict[str, Any], variables: dict[str, str], initializer: str = "-"
) -> Any:
    """Call the package's `entry` (`index.handler`) with `event` as Function Compute does, in
    a clean python3.10; its JSON answer."""
    python = python310()
    if python is None:
        pytest.skip("no python3.10 here to run the Function Compute package with")
    info = json.loads((team.package / "build-info.json").read_text())
    dependencies = str(team.package / info["pythonpath"])
    clean = [python, "-I", "-S", "-W", "ignore::FutureWarning", "-c", INVOKE]
    done = subprocess.run(
        [*clean, str(team.package), dependencies, entry, initializer, json.dumps(event)],
        env={"PATH": "/usr/bin:/bin", **variables},
        cwd=team.package,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def emulator(settings: Settings) -> dict[str, str]:
    return {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
    }


def bill(team: Team, settings: Settings, count: int) -> list[str]:
    """Run the team's own code in its own environment: `count` invoices; their event ids."""
    script = "import json; from app.billing import bill; "
    script += f"print(json.dumps([bill('c-{{0}}'.format(i), 100 + i) for i in range({count})]))"
    done = subprocess.run(
        [str(team.venv / "bin" / "python"), "-c", script],
        cwd=team.repository,
        env=environment(team.venv, **emulator(settings)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids: list[str] = json.loads(done.stdout)
    return ids


def test_init_writes_the_skeleton_and_names_the_installed_wheel(team: Team) -> None:
    written = {line.split()[1] for line in team.init.splitlines() if line.startswith("wrote")}
    assert written == {
        "index.py",
        "s.yaml",
        "firestore.indexes.json",
        "firestore.rules",
        "credentials.example",
        "requirements.txt",
    }
    requirements = (team.repository / "requirements.txt").read_text()
    # The library as this venv has it: the wheel it was installed from.
    assert "firestore-outbox @ file://" in requirements and ".whl" in requirements
    template = (team.repository / "s.yaml").read_text()
    assert "run: outbox fc build --output build/fc" in template
    assert "handler: index.handler" in template and "handler: index.watchdog_handler" in template
    assert "handler: index.http_handler" in template
    # The nudge secret by reference only: s.yaml reads it from the environment at deploy time.
    assert "OUTBOX_NUDGE_SECRET: ${env('OUTBOX_NUDGE_SECRET')}" in template
    secrets = [line.split(":", 1) for line in template.splitlines() if "_SECRET:" in line]
    assert secrets and all(value.strip().startswith("${env('") for _, value in secrets)


def test_build_packages_the_teams_code_with_the_library_for_python310(team: Team) -> None:
    package = team.package
    code = {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()}
    ours = {f for f in code if not f.startswith("python/")}
    assert ours == {"index.py", "app/__init__.py", "app/billing.py", "build-info.json"}
    assert "python/firestore_outbox/function_compute/relay.py" in code
    assert not any(
        f.startswith(("python/firestore_outbox/cli/", "python/firestore_outbox/deploy/"))
        for f in code
    )
    native = wheel_tags(package)
    assert any(name.startswith("grpcio-") for name in native)
    assert all(any("cp310" in tag or "abi3" in tag for tag in tags) for tags in native.values())
    assert f"built {package}: " in team.build and " MB " in team.build
    if python310() and shutil.which("readelf"):
        assert "not checked" not in team.build  # the glibc and import checks both ran


def test_preview_renders_the_teams_s_yaml_with_the_key_hidden(
    team: Team, key_info: dict[str, Any], tmp_path: Path
) -> None:
    s = serverless_devs()
    key = json.dumps(key_info, separators=(",", ":"))
    home = tmp_path / "home"
    home.mkdir()
    done = outbox(
        team.venv,
        team.repository,
        "fc",
        "preview",
        FIRESTORE_PROJECT_ID="billing-prod",
        FIRESTORE_CREDENTIALS_JSON=key,
        OUTBOX_NUDGE_SECRET=SECRET,
        SERVERLESS_DEVS_BIN=s,
        HOME=str(home),
    )
    shown = done.stdout + done.stderr
    assert key_info["private_key_id"] not in shown and SECRET not in shown
    resources = json.loads(done.stdout)["resources"]
    for function in ("relay", "watchdog", "relay-http"):
        variables = resources[function]["props"]["environmentVariables"]
        assert variables["FIRESTORE_CREDENTIALS_JSON"] == f"<hidden: {len(key)} characters>"
        assert variables["FIRESTORE_PROJECT_ID"] == "billing-prod"
    # The HTTP-triggered relay: the relay's settings and the nudge secret, hidden; an
    # anonymous trigger for POST only (the signature is the gate).
    http = resources["relay-http"]["props"]
    assert (http["handler"], http["initializer"]) == ("index.http_handler", "index.initialize")
    assert (
        http["environmentVariables"]["OUTBOX_NUDGE_SECRET"] == f"<hidden: {len(SECRET)} characters>"
    )
    assert (
        http["environmentVariables"]["RELAY_PARTITIONS"]
        == resources["relay"]["props"]["environmentVariables"]["RELAY_PARTITIONS"]
    )
    [trigger] = http["triggers"]
    assert trigger["triggerType"] == "http"
    assert trigger["triggerConfig"]["authType"] == "anonymous"
    assert trigger["triggerConfig"]["methods"] == ["POST"]
    assert "within Function Compute's limit" in done.stderr


def test_the_timer_handler_delivers_the_teams_events(
    team: Team, settings: Settings, db: firestore.Client, receiver: Receiver
) -> None:
    event_ids = bill(team, settings, 3)
    variables = {**emulator(settings), "DOWNSTREAM_SERVICE_URL": receiver.url}
    summary = invoke(team, "index.handler", TIMER_EVENT, variables, initializer="index.initialize")
    assert (summary["status"], summary["processed"], summary["failed"]) == ("ok", 3, 0)
    assert_each_processed_once(db, settings, receiver, *event_ids)
    invoices = [d.to_dict() for d in db.collection("invoices").get()]  # the team's aggregate
    assert sorted(i["amount"] for i in invoices) == [100, 101, 102]


def test_the_watchdog_handler_sees_the_relay_stop_and_run(
    team: Team, settings: Settings, receiver: Receiver
) -> None:
    variables = emulator(settings)
    before = invoke(team, "index.watchdog_handler", TIMER_EVENT, variables)
    assert [p["code"] for p in before["problems"]] == ["relay_stopped"]  # no relay ran yet
    relay_variables = {**variables, "DOWNSTREAM_SERVICE_URL": receiver.url}
    assert invoke(team, "index.handler", TIMER_EVENT, relay_variables)["status"] == "ok"
    after = invoke(team, "index.watchdog_handler", TIMER_EVENT, variables)
    assert "relay_stopped" not in [p["code"] for p in after["problems"]]


def nudge_variables(settings: Settings, receiver: Receiver) -> dict[str, str]:
    return {
        **emulator(settings),
        "DOWNSTREAM_SERVICE_URL": receiver.url,
        "OUTBOX_NUDGE_SECRET": SECRET,
    }


def test_a_signed_nudge_to_the_http_handler_delivers_its_partitions_events_once(
    team: Team, settings: Settings, db: firestore.Client, receiver: Receiver
) -> None:
    event_ids = bill(team, settings, 4)
    partitions = {k: e["partition"] for k, e in stored(db, settings).items()}
    nudged = partitions[event_ids[0]]
    inside = sorted(k for k, p in partitions.items() if p == nudged)
    event = json.loads(event_of(captured([nudged])))  # signed as the `http` sender signs

    response = invoke(
        team, "index.http_handler", event, nudge_variables(settings, receiver), "index.initialize"
    )

    assert response["statusCode"] == 200, response
    answer = json.loads(response["body"])
    assert (answer["status"], answer["nudged"], answer["processed"]) == (
        "ok",
        [nudged],
        len(inside),
    )
    statuses = {k: e["status"] for k, e in stored(db, settings).items()}
    assert statuses == {k: "PROCESSED" if k in inside else "PENDING" for k in event_ids}
    assert Counter(r.event_id for r in receiver.received) == dict.fromkeys(inside, 1)


@pytest.mark.parametrize("make", [forged, altered], ids=["wrong-secret", "body-changed"])
def test_a_forged_or_altered_nudge_is_refused_and_delivers_nothing(
    team: Team, settings: Settings, db: firestore.Client, receiver: Receiver, make: Any
) -> None:
    event_ids = bill(team, settings, 2)
    partition = stored(db, settings)[event_ids[0]]["partition"]
    event = json.loads(make(captured([partition])))

    response = invoke(
        team, "index.http_handler", event, nudge_variables(settings, receiver), "index.initialize"
    )

    assert response["statusCode"] == 401, response
    assert "no signature matches" in json.loads(response["body"])["error"]
    assert receiver.received == []
    assert {e["status"] for e in stored(db, settings).values()} == {"PENDING"}
