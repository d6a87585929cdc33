"""The relays the benchmark compares, by name: adding one is one line in `VARIANTS`.

A variant runs in worker processes (`relay_worker.py`) either from this tree or from a git
commit's `app/` (exported once per run and put first on the workers' `PYTHONPATH`), so that
a relay that has since been replaced still runs side by side with its successor, on the same
emulator, machine and minute.
"""

from __future__ import annotations

import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# main before the partitioned relay (issue 14): per-event leases from one global due-queue.
TODAY = "5e875cf"


@dataclass(frozen=True)
class Variant:
    """`runner`: `reference` (the design note's loop) or `relay`
    (`firestore_outbox.relay.Relay.run()`
    again until drained); `ref`: the git commit whose `app/` runs it (None: this tree)."""

    runner: str
    label: str
    ref: str | None = None
    # The OpenTelemetry SDK installed in the workers (spans and metrics recorded, exported
    # nowhere): what tracing costs the relay's CPU, side by side with the same relay without.
    telemetry: bool = False


VARIANTS: dict[str, Variant] = {
    "reference": Variant("reference", "reference loop (004): one event at a time"),
    "today": Variant("relay", f"today's relay ({TODAY}): per-event leases", ref=TODAY),
    "partitioned": Variant("relay", "partitioned relay (issue 14): partition leases, one write"),
    "traced": Variant(
        "relay", "partitioned relay, OpenTelemetry SDK on, no exporter", telemetry=True
    ),
}


def variant(name: str) -> Variant:
    """A registered variant, or `relay@REF`: the relay of any git commit, branch or tag (a
    look at work in progress, say `relay@part`, before it has a name here)."""
    if name in VARIANTS:
        return VARIANTS[name]
    runner, _, ref = name.partition("@")
    if runner != "relay" or not ref:
        raise ValueError(f"unknown variant {name!r}: choose from {', '.join(VARIANTS)}, relay@REF")
    return Variant("relay", f"the relay at {ref}", ref=ref)


def export_tree(ref: str, into: Path) -> Path:
    """`ref`'s packages unpacked under `into` (`app/`, and `firestore_outbox/` from the package
    issue on); returns the directory to put first on `PYTHONPATH`. Raises `SystemExit` naming
    the ref when git does not know it."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-tree", "--name-only", ref],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    packages = [p for p in ("firestore_outbox", "app") if p in listed.stdout.split()] or ["app"]
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref, *packages],
        capture_output=True,
        check=False,
        timeout=60,
    )
    if archive.returncode:
        raise SystemExit(f"cannot export {ref!r}: {archive.stderr.decode().strip()}")
    target = Path(tempfile.mkdtemp(prefix=f"bench-{ref}-", dir=into))
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.12, and 3.10/3.11 security releases
            tar.extractall(target, filter="data")
        else:
            tar.extractall(target)
    return target
