"""The team's requirements, made installable for another platform.

pip installs for a foreign platform (`--platform`, `--only-binary=:all:`) only from wheels and
indexes: a requirement given as a path, a git URL or a wheel's URL (this library often is) is
first built here into a wheel of its own and then named by its name and version, which
`--find-links` finds. Index options and nested `-r` files are kept.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

__all__ = ["LIBRARY", "BuildFailed", "Requirements", "default_requirement", "pip"]

LIBRARY = "firestore-outbox"
# Options a requirements file may hold that pip takes on the command line as they are.
_PASSED_OPTIONS = ("--index-url", "--extra-index-url", "--find-links", "-i", "-f", "--pre")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?")
_EXTRAS = re.compile(r"\[([^\]]*)\]\s*$")


class BuildFailed(Exception):
    """The package could not be built; the message says why and what to do."""


def normalized(name: str) -> str:
    """A distribution name as pip compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Requirements:
    """Requirement lines and the pip options beside them."""

    lines: tuple[str, ...]
    options: tuple[str, ...] = ()

    @classmethod
    def read(cls, path: Path) -> Requirements:
        """`path`'s requirements, nested `-r` files inlined; comments and blanks dropped."""
        lines: list[str] = []
        options: list[str] = []
        for raw in path.read_text().splitlines():
            line = raw.split(" #", 1)[0].strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(("-r ", "--requirement ")):
                nested = cls.read(path.parent / line.split(None, 1)[1])
                lines += nested.lines
                options += nested.options
            elif line.startswith(("-e ", "--editable ")):
                lines.append(_relative_to(path, line.split(None, 1)[1]))
            elif line.startswith(_PASSED_OPTIONS):
                options += line.split(None, 1) if " " in line else [line]
            elif line.startswith("-"):
                raise BuildFailed(f"{path}: the option {line.split()[0]} is not supported here")
            else:
                lines.append(_relative_to(path, line))
        return cls(tuple(lines), tuple(options))

    def names(self) -> set[str]:
        """The normalized names of the requirements named by name (not by path or URL)."""
        return {normalized(m.group(1)) for line in self.lines if (m := _NAME.match(line))}

    def pinned(self, wheels: Path) -> Requirements:
        """Each requirement given by path or URL built into `wheels` and named
        `name[extras]==version` instead; the others as they are."""
        lines = []
        for line in self.lines:
            if not is_direct(line):
                lines.append(line)
                continue
            name, version = _build_one(line, wheels)
            lines.append(f"{name}{_extras_of(line)}=={version}")
        return Requirements(tuple(lines), self.options)

    def with_extras(self, name: str, extras: Iterable[str]) -> Requirements:
        """The requirement on `name` with `extras` added (`name` added when absent)."""
        wanted = list(extras)
        lines = []
        found = False
        for line in self.lines:
            match = _NAME.match(line)
            if match and normalized(match.group(1)) == normalized(name):
                found = True
                had = [e.strip() for e in (match.group(2) or "[]")[1:-1].split(",") if e.strip()]
                merged = ",".join(dict.fromkeys([*had, *wanted]))
                line = f"{match.group(1)}[{merged}]{line[match.end() :]}"
            lines.append(line)
        if not found:
            raise BuildFailed(
                f"the requirements name no {name}: add a line for it (a version, a wheel's "
                "path or a git URL)"
            )
        return Requirements(tuple(lines), self.options)


def _relative_to(requirements: Path, line: str) -> str:
    """A path requirement (`.`, `../lib[extra]`) taken from the requirements file's folder,
    wherever the build runs."""
    if not line.startswith("."):
        return line
    location, bracket, extras = line.partition("[")
    return str((requirements.parent / location.strip()).resolve()) + bracket + extras


def is_direct(line: str) -> bool:
    """A requirement by path, by URL or by `name @ URL` (not by name and version)."""
    head = line.split(";", 1)[0].strip()
    return " @ " in head or head.startswith((".", "/", "~", "git+", "http:", "https:", "file:"))


def _extras_of(line: str) -> str:
    head = line.split(" ;", 1)[0].strip()
    if " @ " in head:
        named = _NAME.match(head)
        return (named.group(2) or "") if named else ""
    trailing = _EXTRAS.search(head)
    return trailing.group(0).strip() if trailing else ""


def _build_one(line: str, wheels: Path) -> tuple[str, str]:
    """Build the requirement `line` alone into `wheels`; its name and version."""
    with tempfile.TemporaryDirectory(prefix="fc-one-", dir=wheels) as one:
        pip(
            "wheel", "--use-pep517", "--no-deps", "--wheel-dir", one, line.split(" ;", 1)[0].strip()
        )
        [built] = Path(one).glob("*.whl")
        built = built.rename(wheels / built.name)
    name, version = built.name.split("-")[:2]
    return name.replace("_", "-"), version


def default_requirement() -> str:
    """This library as the running interpreter has it: the wheel, path or git URL it was
    installed from, or its version on the package index."""
    try:
        installed = distribution(LIBRARY)
    except PackageNotFoundError:  # running from a checkout without an install
        return LIBRARY
    direct = json.loads(installed.read_text("direct_url.json") or "null")
    if direct and "vcs_info" in direct:
        vcs = direct["vcs_info"]
        return f"{LIBRARY} @ {vcs['vcs']}+{direct['url']}@{vcs.get('commit_id', '')}".rstrip("@")
    if direct and direct.get("url", "").startswith("file:"):
        return f"{LIBRARY} @ {direct['url']}"
    return f"{LIBRARY}=={installed.version}"


def pip(*args: str) -> None:
    """Run this interpreter's pip quietly; `BuildFailed` with pip's own error lines when it
    fails, the dependency it could not find named with what to do."""
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return
    errors = [x for x in done.stderr.splitlines() if x.startswith("ERROR")] or [
        done.stderr.strip()[-2000:]
    ]
    missing = re.search(r"No matching distribution found for (\S+)", done.stderr)
    if missing and "--platform" in " ".join(args):
        raise BuildFailed(
            f"{missing.group(1)} has no wheel for Function Compute's python3.10 "
            "(CPython 3.10, manylinux x86_64, glibc 2.28) and none could be built from source "
            "for it here. Choose a version that publishes such a wheel (pip index versions "
            f"{missing.group(1)}), or build one on a python3.10 Debian 10 machine and add its "
            "folder with --find-links in the requirements file; a pure-Python sdist is built "
            "here when pip can build it. pip said:\n" + "\n".join(errors)
        )
    raise BuildFailed("pip failed:\n" + "\n".join(errors))
