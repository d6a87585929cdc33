"""docs/concepts/your-aggregates.md as a team would follow it: its `billing` package copied
from the page's titled blocks into a fresh directory outside the checkout, its usage block run
with the built wheel against the emulator, and `outbox reconcile --aggregate` as the page
shows it: the invoice and its event written together, a repeat refused whole, a lost event
found."""

from __future__ import annotations

import dataclasses
import importlib
import re
import subprocess
import uuid
from pathlib import Path

from google.cloud.firestore import FieldFilter

from firestore_outbox._lazy import PUBLIC_MODULES
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from tests.e2e.test_readme_from_wheel import user_environment

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "concepts" / "your-aggregates.md"
BLOCK = re.compile(r'^```(python|bash)(?: title="([^"]+)")?\n(.*?)^```', re.S | re.M)


def page_blocks() -> tuple[dict[str, str], list[str], list[str]]:
    """(files by their title, untitled Python blocks, shell lines) in page order."""
    files, scripts, commands = {}, [], []
    for language, title, text in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        if title:
            files[title] = text
        elif language == "python":
            scripts.append(text)
        else:
            commands += [line for line in text.splitlines() if line.strip()]
    return files, scripts, commands


def test_the_page_builds_a_package_of_its_own_on_public_names_only() -> None:
    files, scripts, commands = page_blocks()
    assert set(files) == {"billing/repository.py", "billing/uow.py", "billing/services.py"}
    assert len(scripts) == 1 and commands[0] == "outbox reconcile --aggregate invoice=invoices"
    seen: set[str] = set()
    for text in [*files.values(), *scripts]:
        for module, names in re.findall(r"^from (firestore_outbox\S*) import (.+)$", text, re.M):
            # a public face, and names on its list (a moved name would warn)
            assert module in PUBLIC_MODULES, module
            listed = importlib.import_module(module).__all__
            assert {n.strip() for n in names.split(",")} <= set(listed), (module, names)
            seen.add(module)
        assert not re.search(r"\._[a-z]", text)  # no protected name (dunders are fine)
    assert "firestore_outbox" in seen


def test_the_page_runs_as_written_from_the_wheel(
    installed: Path, settings: Settings, tmp_path: Path
) -> None:
    files, [script], commands = page_blocks()
    team = tmp_path / "team"
    for name, text in files.items():
        (team / name).parent.mkdir(parents=True, exist_ok=True)
        (team / name).write_text(text, encoding="utf-8")
    (team / "billing" / "__init__.py").write_text("", encoding="utf-8")
    (team / "issue.py").write_text(script, encoding="utf-8")
    project = f"aggregates-{uuid.uuid4().hex[:12]}"
    env = {**user_environment(settings, tmp_path), "FIRESTORE_PROJECT_ID": project}
    env["PYTHONPATH"] = str(team)  # the team's own package, as its deployment would have it
    db = get_db_client(dataclasses.replace(settings, project_id=project))

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv, env=env, cwd=team, capture_output=True, text=True, timeout=120, check=False
        )

    issued = run(str(installed / "bin" / "python"), "issue.py")
    assert issued.returncode == 0, issued.stderr
    assert issued.stdout.split() == ["issued", "INV-2026-0001", "ISSUED"]
    invoice = db.collection("invoices").document("INV-2026-0001").get().to_dict()
    assert invoice is not None and invoice["amountCents"] == 12_500
    invoices = FieldFilter("aggregateType", "==", "invoice")
    [event] = db.collection("outbox").where(filter=invoices).get()
    assert (event.get("eventType"), event.get("aggregateId")) == ("InvoiceIssued", "INV-2026-0001")
    assert event.get("status") == "PENDING"

    outbox = str(installed / "bin" / "outbox")
    checked = run(outbox, *commands[0].split()[1:])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "the aggregates invoice in invoices" in checked.stdout
    assert "invoices with no outbox event (invoice): 0" in checked.stdout

    again = run(str(installed / "bin" / "python"), "issue.py")  # the same invoice number
    assert again.returncode != 0 and "DocumentAlreadyExists" in again.stderr
    assert len(db.collection("outbox").get()) == 1  # its event was not written either

    db.collection("outbox").document(event.id).delete()  # an event lost
    found = run(outbox, *commands[0].split()[1:])
    assert found.returncode == 1
    assert "invoices with no outbox event (invoice): 1" in found.stdout
    assert "INV-2026-0001" in found.stdout
