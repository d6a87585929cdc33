"""The relay's folders follow one event: a step (claim, read, publish, settle) imports, when
it runs, only its own modules, later steps and the nouns below them (`relay/`'s root), never
the run that drives it (`relay/run/`) nor an earlier step. Type-only imports
(`if TYPE_CHECKING:`) never run and are left out."""

from __future__ import annotations

from pathlib import Path

import firestore_outbox.relay
from tests.support.import_graph import imports

RELAY = Path(firestore_outbox.relay.__file__).resolve().parent
STEPS = ("claim", "read", "publish", "settle")  # partition leases' order; per-event: read first


def runtime_imports(path: Path) -> set[str]:
    """The `firestore_outbox` modules `path` imports when it runs: at module level and in
    functions, not under `if TYPE_CHECKING:`."""
    found = imports(path, module_level_only=False, run_time=True)
    return {name for name in found if name.startswith("firestore_outbox.")}


def step_of(module: str) -> str | None:
    """`run`, a step, or None (a noun at `relay/`'s root, or no relay module)."""
    parts = module.split(".")
    if parts[:2] != ["firestore_outbox", "relay"] or len(parts) < 4:
        return None
    return parts[2] if parts[2] in (*STEPS, "run") else None


def test_no_step_imports_the_run_or_an_earlier_step() -> None:
    backwards = []
    for step in STEPS:
        for path in sorted((RELAY / step).glob("*.py")):
            for imported in sorted(runtime_imports(path)):
                target = step_of(imported)
                if target == "run" or (target in STEPS and STEPS.index(target) < STEPS.index(step)):
                    backwards.append(f"{step}/{path.name} imports {imported}")
    assert backwards == []


def test_the_nouns_at_the_root_import_no_step_and_not_the_run() -> None:
    upwards = [
        f"{path.name} imports {imported}"
        for path in sorted(RELAY.glob("*.py"))
        if path.name != "__init__.py"  # the public face, loaded lazily
        for imported in sorted(runtime_imports(path))
        if step_of(imported) is not None
    ]
    assert upwards == []
