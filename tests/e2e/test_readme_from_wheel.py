"""What a new user does first, from the built wheel in a fresh virtual environment outside the
checkout (no `app`, no `function_compute`): every Python sample of the README runs as pasted,
and `outbox demo` runs the main job end to end, on the emulator."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import uuid
from pathlib import Path

from google.cloud.firestore import FieldFilter

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_samples() -> list[str]:
    return FENCE.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def user_environment(settings: Settings, home: Path, **more: str) -> dict[str, str]:
    """A clean environment: none of this checkout's variables, the emulator's address."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
        **more,
    }


def test_the_readme_has_python_samples() -> None:
    samples = readme_samples()
    assert samples and all("firestore_outbox" in sample for sample in samples)
    assert not any(
        re.search(r"^\s*(from|import) (app|function_compute)\b", s, re.M) for s in samples
    )


def test_every_readme_sample_runs_as_pasted_from_the_wheel(
    installed: Path,
    settings: Settings,
    tmp_path: Path,
) -> None:
    python = str(installed / "bin" / "python")
    # A project of its own on the emulator: the samples write to the default collections
    # (`orders`, `outbox`), which no other test reads.
    project = f"readme-{uuid.uuid4().hex[:12]}"
    env = user_environment(settings, tmp_path)
    env["FIRESTORE_PROJECT_ID"] = project
    db = get_db_client(dataclasses.replace(settings, project_id=project))
    nothing = subprocess.run([python, "-c", "import app"], env=env, cwd=tmp_path, check=False)
    assert nothing.returncode != 0  # the user's machine has no reference `app`
    for index, sample in enumerate(readme_samples()):
        script = tmp_path / f"sample_{index}.py"
        # Printed at the end so the test can find what the sample wrote.
        script.write_text(sample + "\nprint('order', order_id)\n", encoding="utf-8")
        ran = subprocess.run(
            [python, str(script)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        [order_id] = re.findall(r"^order (\S+)$", ran.stdout, re.M)
        order = db.collection("orders").document(order_id).get().to_dict()
        assert order is not None and order["status"] == "SHIPPED"
        events = (
            db.collection("outbox").where(filter=FieldFilter("aggregateId", "==", order_id)).get()
        )
        kinds = sorted((e.get("eventType"), e.get("status")) for e in events)
        assert kinds == [("OrderCreated", "PENDING"), ("OrderShipped", "PENDING")]


def test_outbox_demo_runs_from_the_wheel(
    installed: Path,
    settings: Settings,
    tmp_path: Path,
) -> None:
    outbox = str(installed / "bin" / "outbox")
    ran = subprocess.run(
        [outbox, "demo"],
        env=user_environment(settings, tmp_path, LOG_LEVEL="WARNING"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "status=ok processed=2" in ran.stdout
    assert re.search(r"delivered \d+ ms after its commit returned", ran.stdout)
    assert "run this from the root of a checkout" not in ran.stdout + ran.stderr
    assert os.path.commonpath([outbox, str(installed)]) == str(installed)
