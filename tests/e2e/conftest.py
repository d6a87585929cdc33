"""The end-to-end tests' shared fixtures: the wheel built once, and a fresh virtual
environment outside the checkout with it installed (tests/e2e/test_install.py says how, and
why its dependencies are borrowed by default)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FULL = os.environ.get("OUTBOX_FULL_INSTALL_TEST") == "1"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [built] = out.glob("firestore_outbox-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment outside the checkout with the wheel installed in it."""
    target = tmp_path_factory.mktemp("installed") / "venv"
    venv.create(target, with_pip=True)
    python = target / "bin" / "python"
    if FULL:
        install = [str(python), "-m", "pip", "install", "-q", f"{wheel}[fc]"]
    else:
        install = [str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)]
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # After the venv's own site-packages, so the library comes from the wheel, not this
        # checkout (a directory named in a .pth line has its own .pth files ignored: this
        # checkout's editable install is not seen).
        borrowed = sysconfig.get_paths()["purelib"]
        (Path(site) / "zz_borrowed_dependencies.pth").write_text(borrowed + "\n")
    # Outside the checkout, whose `firestore_outbox.egg-info` pip would take for an installed
    # copy if the working directory or PYTHONPATH put it on the path ("already satisfied").
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(install, check=True, capture_output=True, timeout=600, cwd=target, env=clean)
    assert (target / "bin" / "outbox").exists(), "the wheel was not installed"
    return target
