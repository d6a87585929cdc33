"""Build the code directory that Serverless Devs uploads to Function Compute, without Docker.

    python -m function_compute.build --output build/fc              # for Function Compute
    python -m function_compute.build --output build/local --local   # for this interpreter
    python -m function_compute.build --extra rocketmq   # also the extra RELAY_PUBLISHER needs

The `otel` extra (OpenTelemetry's SDK and OTLP exporter) is added without being named when
the build's environment asks for OTLP export, by the rule the relay itself follows
(`Configuration.otlp_signals`: an OTLP endpoint set, its exporter not `none`,
the SDK not disabled). `s deploy` runs the build with its own environment, `.env` included, so
setting the OTEL_* variables there (and uncommenting them in s.yaml) is all the function needs to
export.

Layout of the output (Function Compute mounts it at /code):

    firestore_outbox/         the library, taken from the project's wheel
    app/, function_compute/   the reference application and the entry points s.yaml names
                              (the relay's handler, the order API's), from the repository
    python/                   the dependencies; s.yaml sets PYTHONPATH=/code/python
    build-info.json           what it was built for

Only what the relay runs is shipped: the `outbox` command, the demo, the emulator manager, the
test downstream, the reference consumer, the wire meter and the build tools stay out (`LEFT_OUT`),
as does the CloudEvents SDK only they use.

For Function Compute the dependencies are pip-installed for CPython 3.10 on
manylinux_2_28_x86_64 and the older manylinux levels (`--platform`, `--only-binary=:all:`),
so native wheels such as grpcio and pycurl (libcurl inside) match the python3.10 runtime,
Debian 10 with glibc 2.28, whatever machine builds them. Dependencies published only as
source (aliyun-fc2) are first built into pure-Python wheels here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from email.parser import Parser
from pathlib import Path

import firestore_outbox.function_compute  # noqa: F401  (first: it quiets google-api-core's 3.10 notice)
from firestore_outbox import Configuration

ROOT = Path(__file__).resolve().parents[1]
# The library comes from the project's wheel (what `pip install` gets); the reference
# application and the entry points s.yaml names, which the wheel does not install, from the
# repository itself.
LIBRARY = "firestore_outbox"
SOURCE_PACKAGES = ("app", "function_compute")
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
FC_GLIBC = (2, 28)  # the python3.10 runtime's: Debian 10
DEPENDENCIES_DIR = "python"
# Always in the package: the FC 2.0 publisher and the front door's answer encryption.
BASE_EXTRAS = ("fc", "crypto")
# What the relay never imports at run time: the operator and dev tools (the `outbox` command,
# the demo, the emulator manager, the test downstream and the reference consumer behind it,
# the wire meter) and this builder. Shipping them cost package size and cold-start time and
# put tools meant for a laptop on the function (tests/e2e/function_compute/test_deploy.py runs the
# handler
# without them and checks they are absent).
LEFT_OUT = (
    "firestore_outbox/cli/",
    "firestore_outbox/example/demo",
    "firestore_outbox/testing/",
    "firestore_outbox/consumer/receiver.py",
    "firestore_outbox/idempotency/limits.py",
    "app/order_counter.py",
    "firestore_outbox/example/order_counter.py",
    "firestore_outbox/consumer/delivery.py",
    "firestore_outbox/consumer/receiver_settings.py",
    "function_compute/build.py",
    "function_compute/preview.py",
)
# Added when the environment asks for OTLP export (`otlp_signals`).
OTLP_EXTRA = "otel"
# Dependencies only the modules left out import (the reference consumer's CloudEvents SDK).
# `requests` stays: google-api-core needs it anyway.
TOOLS_ONLY_REQUIREMENTS = ("cloudevents",)


def _copy_sources(output: Path) -> None:
    """The reference application and the entry points, from the repository (not the wheel)."""
    for package in SOURCE_PACKAGES:
        for source in sorted((ROOT / package).rglob("*.py")):
            relative = source.relative_to(ROOT).as_posix()
            if relative.startswith(LEFT_OUT):
                continue
            target = output / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def build(output: Path, *, local: bool = False, extras: tuple[str, ...] = BASE_EXTRAS) -> Path:
    """Assemble the code directory at `output` (replaced if it exists) and return it."""
    output = output.resolve()
    if output == ROOT or ROOT.is_relative_to(output):
        raise ValueError(f"refusing to replace {output}: it holds the project")
    if output.exists():
        shutil.rmtree(output)
    output.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="fc-build-") as scratch:
        wheels = Path(scratch)
        _pip("wheel", "--use-pep517", "--no-deps", "--wheel-dir", str(wheels), str(ROOT))
        [ours] = wheels.glob("firestore_outbox-*.whl")
        requirements = _requirements(ours, extras)
        # Source-only dependencies become wheels here; native ones are skipped below.
        _pip("wheel", "--use-pep517", "--wheel-dir", str(wheels), *requirements)
        target = ["--target", str(output / DEPENDENCIES_DIR), "--find-links", str(wheels)]
        if not local:
            target += [
                *(f"--platform={platform}" for platform in FC_PLATFORMS),
                "--python-version",
                FC_PYTHON,
                "--implementation",
                "cp",
                "--only-binary=:all:",
            ]
        _pip("install", "--no-compile", *target, *requirements)
        with zipfile.ZipFile(ours) as wheel:
            members = [
                name
                for name in wheel.namelist()
                if name.split("/")[0] == LIBRARY and not name.startswith(LEFT_OUT)
            ]
            wheel.extractall(output, members)
    _copy_sources(output)
    python = f"{sys.version_info.major}.{sys.version_info.minor}" if local else FC_PYTHON
    info = {
        "python": python,
        "platform": "local" if local else FC_PLATFORM,
        "requirements": requirements,
        "pythonpath": DEPENDENCIES_DIR,
        "leftOut": list(LEFT_OUT),
    }
    (output / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
    return output


def _requirements(wheel: Path, extras: tuple[str, ...]) -> list[str]:
    """The wheel's own Requires-Dist, with the named extras' requirements."""
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(archive.read(metadata).decode())
    chosen = []
    for requirement in message.get_all("Requires-Dist") or []:
        spec, _, marker = requirement.partition(";")
        marker = marker.strip()
        name = re.split(r"[^A-Za-z0-9._-]", spec.strip(), maxsplit=1)[0].lower()
        if name in TOOLS_ONLY_REQUIREMENTS:
            continue
        if not marker or any(marker == f'extra == "{extra}"' for extra in extras):
            chosen.append(spec.strip())
    return chosen


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]
    subprocess.run(command, check=True)


def main(argv: list[str] | None = None) -> int:
    # The module docstring is laid out by hand (a diagram, examples): keep its line breaks.
    parser = argparse.ArgumentParser(
        prog="python -m function_compute.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=ROOT / "build" / "fc",
        metavar="DIR",
        help="the code directory to (re)create (default build/fc in the project)",
    )
    parser.add_argument(
        "--local",
        action="store_true",
        help="build for this interpreter instead of Function Compute's python3.10 on "
        f"{FC_PLATFORM} (default: for Function Compute)",
    )
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        help="also install this optional extra (repeatable; default: none beyond fc and "
        "crypto, and otel when an OTLP endpoint is set); s.yaml passes RELAY_PUBLISHER, and a "
        "publisher without an extra of its own (http, mns, fc3) adds nothing",
    )
    args = parser.parse_args(argv)
    extras = extras_for(args.extra, os.environ)
    output = build(args.output, local=args.local, extras=extras)
    print(f"built {output} (extras: {', '.join(extras)})")
    return 0


def extras_for(named: Iterable[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The base extras, the ones `named`, and `otel` when `environ` asks for OTLP export;
    each once."""
    otel = (OTLP_EXTRA,) if Configuration.load(environ).otlp_signals() else ()
    return tuple(dict.fromkeys((*BASE_EXTRAS, *named, *otel)))


if __name__ == "__main__":
    sys.exit(main())
