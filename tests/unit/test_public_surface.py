"""The public surface is enough for the project's own entry points, and says what it is.

`app/` (the design card's names), `function_compute/` (the deployed entry points) and
`firestore_outbox/example/` (the reference application the wheel ships) import from the
library only names a public module exports: a user who installs the wheel can do what they
do. Each public module lists a lazy name once, as a type-only import (`firestore_outbox._lazy`).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from firestore_outbox._lazy import PUBLIC_MODULES, type_only_imports

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINTS = ("app", "function_compute", "firestore_outbox/example")


def public_names() -> dict[str, set[str]]:
    return {name: set(importlib.import_module(name).__all__) for name in PUBLIC_MODULES}


def library_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from firestore_outbox... import name` in `path`, and
    (module, "") of every plain `import firestore_outbox...`."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("firestore_outbox"):
            found += [(str(node.module), alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("firestore_outbox")]
    return found


def private_uses(folder: str) -> list[str]:
    public = public_names()
    own = folder.replace("/", ".")
    offenders = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module, name in library_imports(path):
            if module == own or module.startswith(own + "."):
                continue  # the example's own modules
            if path.name == "__init__.py" and module == "firestore_outbox._lazy":
                continue  # a package of the library's own: its exports load lazily
            if module in public and name in ("*", "__all__", ""):
                continue  # a public module itself, its list or all of it
            if name not in public.get(module, set()):
                offenders.append(f"{path.relative_to(ROOT)}: from {module} import {name}")
    return offenders


@pytest.mark.parametrize("folder", ENTRY_POINTS)
def test_the_entry_points_use_only_public_names(folder: str) -> None:
    assert private_uses(folder) == []


def test_the_check_sees_a_private_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "a.py").write_text(
        "from firestore_outbox import Relay\nfrom firestore_outbox.relay.run.relay import Relay\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    assert private_uses("shop") == ["shop/a.py: from firestore_outbox.relay.run.relay import Relay"]


@pytest.mark.parametrize("name", [m for m in PUBLIC_MODULES if m.count(".") <= 1])
def test_each_lazy_name_is_listed_once_and_exported(name: str) -> None:
    module = importlib.import_module(name)
    path = Path(str(module.__file__))
    lazy = type_only_imports(path)
    eager = {n for n in vars(module) if not n.startswith("_")} - set(lazy)
    assert set(lazy) <= set(module.__all__), "a type-only import that is not exported"
    assert set(module.__all__) <= set(lazy) | eager, "an exported name that is not defined"
    assert len(module.__all__) == len(set(module.__all__))
    for exported in module.__all__:
        assert getattr(module, exported) is not None


def moved_names() -> list[tuple[str, str, str]]:
    """(face, old name, new dotted place) of every name a face no longer lists."""
    found = []
    for face in PUBLIC_MODULES:
        for name, place in getattr(importlib.import_module(face), "_MOVED", {}).items():
            found.append((face, name, place))
    return found


MOVED = moved_names()


@pytest.mark.parametrize(("face", "name", "place"), MOVED, ids=[f"{f}.{n}" for f, n, _ in MOVED])
def test_a_moved_name_still_imports_with_a_warning_naming_its_place(
    face: str, name: str, place: str
) -> None:
    where, _, new_name = place.rpartition(".")
    assert name not in importlib.import_module(face).__all__
    assert new_name in importlib.import_module(where).__all__
    with pytest.warns(DeprecationWarning, match=f"import {place.replace('.', '[.]')} instead"):
        old = getattr(importlib.import_module(face), name)
    assert old is getattr(importlib.import_module(where), new_name)
    # and on the next import too: each importing place is told
    with pytest.warns(DeprecationWarning):
        exec(f"from {face} import {name}", {})


def test_every_name_that_left_a_face_is_moved_and_named_in_the_upgrade_notes() -> None:
    notes = (ROOT / "docs" / "upgrading.md").read_text()
    section = notes[notes.index("## Upgrading to 0.8") :]
    section = section[: section.index("\n## ", 1)]
    for face, name, place in MOVED:
        assert f"`{face}.{name}`" in section, f"{face}.{name} not in the 0.8 upgrade notes"
        assert f"`{place}`" in section, f"{place} not in the 0.8 upgrade notes"


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    import firestore_outbox

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'Nonesuch'"):
            _ = firestore_outbox.Nonesuch  # type: ignore[attr-defined]


def test_the_faces_keep_configuration_on_top_and_the_publishers_on_theirs() -> None:
    public = public_names()
    holding = [face for face, names in public.items() if "Configuration" in names]
    assert holding == ["firestore_outbox"]
    loaders = {n for names in public.values() for n in names if n.startswith("load_")}
    assert loaders <= public["firestore_outbox"]
    publishers = public["firestore_outbox.publishers"]
    assert {"Publisher", "HttpSettings", "KafkaSettings", "AccessKeySettings"} <= publishers
    for face, names in public.items():
        if face != "firestore_outbox.publishers":
            assert not names & publishers, face
    assert len(public["firestore_outbox"]) <= 30
    assert len(public["firestore_outbox.relay"]) <= 12


def test_the_audiences_see_short_lists() -> None:
    public = public_names()
    # A producer needs about 8 names (and the errors); a consumer about 5 to verify and
    # deduplicate, a dozen more to serve HTTP itself; a deployer a handler (and the
    # watchdog's, a function of its own; the HTTP trigger's, for `http` nudges).
    assert len(public["firestore_outbox.producer"]) <= 12
    assert len(public["firestore_outbox.consumer"]) <= 24
    assert {"handler", "initialize"} <= public["firestore_outbox.function_compute"]
    assert {"watchdog_handler", "http_handler"} <= public["firestore_outbox.function_compute"]
    assert len(public["firestore_outbox.function_compute"]) <= 6


NOTHING_GLOBAL = """
import sys, warnings
# The dependencies first: urllib3 and requests add filters of their own when imported.
import google.cloud.firestore, google.api_core, grpc, requests, urllib3, opentelemetry.trace
before = list(warnings.filters)
import firestore_outbox
from firestore_outbox import FirestoreUnitOfWork, Relay, get_db_client
from firestore_outbox.consumer import Inbox
library = list(warnings.filters) == before
import firestore_outbox.function_compute
quieted = [f for f in warnings.filters if f not in before]
print(library, len(quieted), quieted[0][0], quieted[0][3].pattern if quieted else "")
"""


def test_the_library_changes_no_warning_filter_its_entry_points_silence_one_notice() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", NOTHING_GLOBAL], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == [
        "True", "1", "ignore", r"google\.api_core\._python_version_support"
    ]  # fmt: skip
