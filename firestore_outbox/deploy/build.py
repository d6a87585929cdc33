"""`outbox fc build`: the code directory Serverless Devs uploads to Function Compute, built from
the team's own repository on any host, without Docker.

Layout of the output (Function Compute mounts it at /code):

    index.py, app/, ...   the team's own code: the modules and packages in the working
                          directory (not its venvs, build, dist, tests or docs)
    python/               the requirements (this library among them); s.yaml sets
                          PYTHONPATH=/code/python
    build-info.json       what it was built for

The requirements come from the team's `requirements.txt` (this library from an index, a
wheel's path or a git URL; the extras `fc` and `crypto` always added, `otel` when the
environment asks for OTLP export, more with `--extra`). For Function Compute they are
pip-installed for CPython 3.10 on manylinux_2_28_x86_64 and the older manylinux levels
(`--platform`, `--only-binary=:all:`), so native wheels such as grpcio and pycurl match the
python3.10 runtime (Debian 10, glibc 2.28) whatever machine builds them; dependencies published
only as source (aliyun-fc2) are first built into pure-Python wheels here. Then every native
library is checked against glibc 2.28 (`readelf`), and the entry points s.yaml names are
imported in a clean interpreter (this one with `--local`, else a python3.10 when one is found).

Only what the relay runs is shipped of this library: the `outbox` command, the demo, the
emulator manager, the test downstream, the reference consumer, the wire meter and these build
tools stay out (`LEFT_OUT`), as does the CloudEvents SDK only they use.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from firestore_outbox.config.loader import Configuration
from firestore_outbox.deploy.checks import (
    entry_points,
    import_failures,
    python310,
    too_new_for_glibc,
)
from firestore_outbox.deploy.requirements import (
    LIBRARY,
    BuildFailed,
    Requirements,
    default_requirement,
    pip,
)
from firestore_outbox.deploy.sources import copy_sources

__all__ = ["BASE_EXTRAS", "FC_PLATFORM", "FC_PYTHON", "Built", "build", "extras_for"]

FC_PYTHON = "3.10"
FC_PLATFORM = "manylinux_2_28_x86_64"
# pip takes exactly the platforms it is given (and the older aliases of manylinux2014), so
# each glibc level whose wheels the dependencies ship is named, up to the runtime's.
FC_PLATFORMS = (
    FC_PLATFORM,
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux2014_x86_64",
)
DEPENDENCIES_DIR = "python"
# Always in the package: the FC 2.0 publisher and the front door's answer encryption.
BASE_EXTRAS = ("fc", "crypto")
OTLP_EXTRA = "otel"
# What the relay never imports at run time: the operator and dev tools and what only they
# import. Shipping them cost package size and cold-start time and put tools meant for a laptop
# on the function (tests/e2e/function_compute/test_deploy.py runs the handler without them).
LEFT_OUT = (
    "firestore_outbox/cli/",
    "firestore_outbox/deploy/",
    "firestore_outbox/example/demo",
    "firestore_outbox/example/order_counter.py",
    "firestore_outbox/testing/",
    "firestore_outbox/consumer/receiver.py",
    "firestore_outbox/consumer/delivery.py",
    "firestore_outbox/consumer/receiver_settings.py",
    "firestore_outbox/idempotency/limits.py",
)
# Distributions only the modules left out import (the reference consumer's CloudEvents SDK),
# removed unless the team's requirements name them.
TOOLS_ONLY_REQUIREMENTS = ("cloudevents",)


@dataclass
class Built:
    """A built package: where, how large, whose code, and the checks that could not run."""

    output: Path
    size: int = 0
    sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def build(
    output: Path,
    *,
    source: Path | None = None,
    requirements: Path | None = None,
    local: bool = False,
    extras: Iterable[str] = BASE_EXTRAS,
    exclude: Iterable[str] = (),
) -> Built:
    """Assemble the code directory at `output` (replaced if it exists) from the repository at
    `source` (default: the working directory); `BuildFailed` says what went wrong."""
    source = (source or Path.cwd()).resolve()
    output = output.resolve()
    if output == source or source.is_relative_to(output):
        raise BuildFailed(f"refusing to replace {output}: it holds the project")
    info_file = output / "build-info.json"
    if output.exists() and any(output.iterdir()) and not info_file.is_file():
        # Only what a build made is replaced: `--output app` must not delete the app.
        raise BuildFailed(f"refusing to replace {output}: it holds no build-info.json of a build")
    wanted = _requirements(source, requirements)
    if output.exists():
        shutil.rmtree(output)
    dependencies = output / DEPENDENCIES_DIR
    dependencies.mkdir(parents=True)
    info_file.write_text("{}\n")  # a build's from now on, even if this one fails
    with tempfile.TemporaryDirectory(prefix="fc-build-") as scratch:
        wheels = Path(scratch)
        pinned = wanted.pinned(wheels).with_extras(LIBRARY, extras)
        links = ["--find-links", str(wheels), *pinned.options]
        # Source-only dependencies become wheels here; native ones are skipped below. PEP 517
        # builds them in an isolated environment: a setup.py-only sdist (aliyun-fc2) needs
        # the `wheel` package, which a fresh virtualenv on Python 3.10 does not have.
        pip("wheel", "--use-pep517", "--wheel-dir", str(wheels), *links, *pinned.lines)
        target = ["--target", str(dependencies), *links]
        if not local:
            target += [
                *(f"--platform={platform}" for platform in FC_PLATFORMS),
                "--python-version",
                FC_PYTHON,
                "--implementation",
                "cp",
                "--only-binary=:all:",
            ]
        pip("install", "--no-compile", *target, *pinned.lines)
    _leave_out(dependencies, keep=wanted.names())
    installed = {p.name if p.is_dir() else p.stem for p in dependencies.iterdir()}
    built = Built(output, sources=copy_sources(source, output, installed, exclude))
    info = {
        "python": f"{sys.version_info.major}.{sys.version_info.minor}" if local else FC_PYTHON,
        "platform": "local" if local else FC_PLATFORM,
        "requirements": list(pinned.lines),
        "sources": built.sources,
        "pythonpath": DEPENDENCIES_DIR,
        "leftOut": list(LEFT_OUT),
    }
    info_file.write_text(json.dumps(info, indent=2) + "\n")
    _check(built, source, dependencies, local)
    built.size = sum(p.stat().st_size for p in output.rglob("*") if p.is_file())
    return built


def _requirements(source: Path, path: Path | None) -> Requirements:
    if path is not None:
        if not path.is_file():
            raise BuildFailed(f"no requirements file at {path}")
        return Requirements.read(path)
    if (source / "requirements.txt").is_file():
        return Requirements.read(source / "requirements.txt")
    return Requirements((default_requirement(),))


def _leave_out(dependencies: Path, keep: set[str]) -> None:
    """Remove `LEFT_OUT` from the installed library, and the tools-only distributions."""
    shutil.rmtree(dependencies / "bin", ignore_errors=True)  # console scripts: never run there
    library = dependencies / "firestore_outbox"
    for path in sorted(library.rglob("*"), reverse=True):  # files before their folders
        left_out = path.relative_to(dependencies).as_posix().startswith(LEFT_OUT)
        if left_out and path.is_file():
            path.unlink()
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for name in TOOLS_ONLY_REQUIREMENTS:
        if name in keep:
            continue
        for record in dependencies.glob(f"{name}-*.dist-info/RECORD"):
            for line in record.read_text().splitlines():
                installed = dependencies / line.split(",", 1)[0]
                if installed.is_file():
                    installed.unlink()
            shutil.rmtree(record.parent)
            shutil.rmtree(dependencies / name, ignore_errors=True)


def _check(built: Built, source: Path, dependencies: Path, local: bool) -> None:
    if not local:
        too_new = too_new_for_glibc(dependencies)
        if too_new is None:
            built.skipped.append("the glibc check (no readelf: install binutils)")
        elif too_new:
            listed = ", ".join(f"{k} (GLIBC_{v[0]}.{v[1]})" for k, v in too_new.items())
            raise BuildFailed(f"these native libraries need a glibc newer than 2.28: {listed}")
    entries = entry_points(source)
    python = sys.executable if local else python310()
    if not entries:
        built.skipped.append("the import check (no s.yaml handlers and no index.py)")
    elif python is None:
        built.skipped.append("the import check (no python3.10 here; --local checks with this one)")
    elif failures := import_failures(python, built.output, dependencies, entries):
        raise BuildFailed("the package's entry points do not import:\n" + "\n".join(failures))


def extras_for(named: Iterable[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The base extras, the ones `named`, and `otel` when `environ` asks for OTLP export;
    each once (s.yaml passes RELAY_PUBLISHER: one without an extra of its own adds nothing)."""
    otel = (OTLP_EXTRA,) if Configuration.load(environ).otlp_signals() else ()
    return tuple(dict.fromkeys((*BASE_EXTRAS, *named, *otel)))
