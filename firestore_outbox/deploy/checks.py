"""What a built package is checked for before it is uploaded: native libraries that load on the
runtime's glibc, and entry points that import in a clean interpreter the way Function Compute
imports them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = [
    "FC_GLIBC",
    "entry_points",
    "glibc_versions_needed",
    "import_failures",
    "python310",
    "too_new_for_glibc",
]

FC_GLIBC = (2, 28)  # the python3.10 runtime's: Debian 10
_ENTRY = re.compile(r"^\s*(?:handler|initializer):\s*['\"]?([A-Za-z0-9_./]+\.[A-Za-z0-9_]+)")
# What Function Compute's python runtime does, reduced: the code directory and its PYTHONPATH
# first on sys.path, each `module.function` s.yaml names imported and found callable.
_IMPORT = """
import importlib, sys
code, dependencies = sys.argv[1], sys.argv[2]
sys.path[:0] = [code, dependencies]
for entry in sys.argv[3:]:
    module, _, name = entry.rpartition(".")
    try:
        found = getattr(importlib.import_module(module.replace("/", ".")), name)
    except Exception as exc:
        print(f"{entry}: {type(exc).__name__}: {exc}")
        continue
    if not callable(found):
        print(f"{entry}: not callable")
"""


def glibc_versions_needed(library: Path) -> set[tuple[int, int]]:
    """The `GLIBC_x.y` symbol versions a shared library needs (`readelf -V`)."""
    listing = subprocess.run(
        ["readelf", "-V", "-W", str(library)], capture_output=True, text=True, check=False
    ).stdout
    found = re.findall(r"Name: GLIBC_(\d+)\.(\d+)", listing)
    return {(int(major), int(minor)) for major, minor in found}


def too_new_for_glibc(dependencies: Path) -> dict[str, tuple[int, int]] | None:
    """Each shared library under `dependencies` that needs a glibc newer than the runtime's,
    with the version it needs; None without `readelf` (binutils) to check with."""
    if shutil.which("readelf") is None:
        return None
    found = {}
    for library in sorted(dependencies.rglob("*.so*")):
        needed = glibc_versions_needed(library) if library.is_file() else set()
        if needed and max(needed) > FC_GLIBC:
            found[str(library.relative_to(dependencies))] = max(needed)
    return found


def entry_points(source: Path) -> list[str]:
    """The `handler:` and `initializer:` entries of `source`'s s.yaml (`index.handler`, ...),
    or `index.handler` when there is no s.yaml but an index.py."""
    template = source / "s.yaml"
    if template.is_file():
        found = []
        for line in template.read_text().splitlines():
            if match := _ENTRY.match(line):
                found.append(match.group(1))
        return list(dict.fromkeys(found))
    return ["index.handler"] if (source / "index.py").is_file() else []


def import_failures(
    python: str, package: Path, dependencies: Path, entries: list[str]
) -> list[str]:
    """Import each entry point from `package` in a clean interpreter (`-I -S`: no site-packages,
    no PYTHONPATH, no user site; `-B`: nothing written into the package); one line per
    failure."""
    clean = [python, "-I", "-S", "-B", "-W", "ignore::FutureWarning", "-c", _IMPORT]
    done = subprocess.run(
        [*clean, str(package), str(dependencies), *entries],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        cwd=package,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    failures = done.stdout.splitlines()
    if done.returncode != 0:
        failures.append(f"the interpreter failed: {done.stderr.strip()[-1000:]}")
    return failures


def python310() -> str | None:
    """A CPython 3.10 interpreter on this machine (pyenv's or on PATH), to import the
    package's entry points with as the runtime will."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [str(p) for p in sorted(pyenv.glob("3.10*/bin/python3.10"))]
    candidates.append(shutil.which("python3.10") or "")
    for candidate in filter(None, candidates):
        probe = [candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 10)"]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    return None
