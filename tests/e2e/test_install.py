"""Installing as the README says: a wheel built with `python -m build`, extras included.

Before, the README said `pip install firestore-outbox`, and no package index has it.

A full install of the wheel with its dependencies into a fresh venv takes about a minute
here (54-59 s measured, most of it resolving and unpacking grpcio and the Google libraries),
over the suite's budget, so by default the fresh venv gets the wheel with `--no-deps` and
borrows the dependencies already installed for the tests (a `.pth` line); the wheel's own
files, metadata, extras and console script are what is checked. `OUTBOX_FULL_INSTALL_TEST=1`
installs `wheel[fc]` with its dependencies instead."""

from __future__ import annotations

import subprocess
import zipfile
from email.parser import Parser
from pathlib import Path


def test_the_wheel_holds_the_packages_the_entry_point_and_the_extras(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [metadata] = [n for n in names if n.endswith(".dist-info/METADATA")]
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        message = Parser().parsestr(archive.read(metadata).decode())
        scripts = archive.read(entry_points).decode()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith("-info")}
    # One import package, named after the distribution: no `app` to collide with the user's,
    # no tests, no bench, no deployment entry points.
    assert tops == {"firestore_outbox"}
    assert "firestore_outbox/cli/__init__.py" in names
    # `outbox fc init`'s templates are package data (pyproject's package-data).
    assert "firestore_outbox/deploy/templates/s.yaml.in" in names
    assert "firestore_outbox/deploy/templates/firestore.indexes.json" in names
    assert message["Name"] == "firestore-outbox"
    assert "outbox = firestore_outbox.cli:main" in scripts
    requires = message.get_all("Requires-Dist") or []
    assert any(r.startswith("aliyun-fc2") and 'extra == "fc"' in r for r in requires)
    assert {"fc", "firebase"} <= set(message.get_all("Provides-Extra") or [])


def test_the_installed_wheel_runs_outbox(installed: Path, tmp_path: Path) -> None:
    target = installed
    python = target / "bin" / "python"
    outbox = str(target / "bin" / "outbox")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    version = subprocess.run([outbox, "--version"], capture_output=True, text=True, env=env)
    assert version.returncode == 0 and version.stdout.startswith("outbox 0."), version.stderr
    assert "not installed" not in version.stdout
    helped = subprocess.run([outbox, "--help"], capture_output=True, text=True, env=env)
    assert helped.returncode == 0 and "relay" in helped.stdout and "status" in helped.stdout
    where = subprocess.run(
        [str(python), "-c", "import firestore_outbox; print(firestore_outbox.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert where.stdout.startswith(str(target)), where.stdout  # the wheel's code, not ours

    # The user's own `app` package (most Flask/FastAPI services have one) and the library
    # import side by side; before, the wheel installed an `app` and one of them broke.
    service = tmp_path / "service"
    (service / "app").mkdir(parents=True)
    (service / "app" / "__init__.py").write_text("NAME = 'the user app'\n")
    (service / "app" / "uow.py").write_text("KIND = 'their own unit of work'\n")
    both = subprocess.run(
        [
            str(python),
            "-c",
            "import app, app.uow, firestore_outbox; "
            "from firestore_outbox import FirestoreUnitOfWork, Relay; "
            "print(app.NAME, app.uow.KIND, FirestoreUnitOfWork.__module__, Relay.__name__)",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=service,
    )
    assert both.stdout.split() == [
        "the", "user", "app", "their", "own", "unit", "of", "work",
        "firestore_outbox.producer.uow", "Relay",
    ], both.stderr  # fmt: skip
    beside = subprocess.run(
        [outbox, "--version"], capture_output=True, text=True, env=env, cwd=service
    )
    assert beside.returncode == 0 and beside.stdout.startswith("outbox 0."), beside.stderr
