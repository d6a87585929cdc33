"""The team's own code in the package: `index.py` and the other modules and packages at the top
of the working directory, never its virtual environments, builds, tests or docs.

A package the requirements install (this library, in its own repository) is taken from the
installed copy, not from the directory: the package's root comes first on the function's
`sys.path` and would hide it.
"""

from __future__ import annotations

import fnmatch
import shutil
from collections.abc import Iterable
from pathlib import Path

__all__ = ["copy_sources", "source_entries"]

# Folders that are never the function's code, package or not.
NOT_CODE = frozenset({"tests", "test", "build", "dist", "docs", "site", "node_modules"})
# Top-level scripts that configure tools, not the function.
NOT_MODULES = frozenset({"setup.py", "conftest.py", "noxfile.py", "fabfile.py"})


def source_entries(root: Path, installed: Iterable[str]) -> list[Path]:
    """The top-level modules and packages of `root` that go into the package."""
    taken = set(installed)
    chosen = []
    for entry in sorted(root.iterdir()):
        name = entry.name
        if name.startswith((".", "_")) or entry.is_symlink():
            continue
        if entry.is_file() and entry.suffix == ".py" and name not in NOT_MODULES:
            if entry.stem not in taken:
                chosen.append(entry)
        elif (
            entry.is_dir()
            and (entry / "__init__.py").is_file()
            and name not in NOT_CODE
            and name not in taken
        ):
            chosen.append(entry)
    return chosen


def copy_sources(
    root: Path, output: Path, installed: Iterable[str], exclude: Iterable[str] = ()
) -> list[str]:
    """Copy `root`'s code into `output` (paths matching an `exclude` glob, relative to
    `root`, left out); the top-level names copied."""
    patterns = tuple(exclude)

    def wanted(path: Path) -> bool:
        relative = path.relative_to(root).as_posix()
        if "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
            return False
        return not any(fnmatch.fnmatch(relative, pattern) for pattern in patterns)

    copied = []
    for entry in source_entries(root, installed):
        files = [entry] if entry.is_file() else sorted(entry.rglob("*"))
        for source in files:
            if source.is_file() and wanted(source):
                target = output / source.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        copied.append(entry.name)
    return copied
