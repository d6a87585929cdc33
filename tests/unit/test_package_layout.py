"""The library's shape: one package, folders a reader can take in, no way back into `app`,
folders that import one way only (the composition root `config` on top, under only the entry
points that call it, the root modules at the bottom; every import that runs counts: at module
level, inside functions and through lazy exports), and no import cycle between modules
(type-only imports included: a cycle hidden behind `TYPE_CHECKING` is still two modules that
cannot be understood one without the other)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.import_graph import (
    LIBRARY,
    MODULES,
    ROOT,
    cycles,
    folder_graph,
    imports,
    lazy_imports,
    library_graph,
    reachable,
)

MAX_MODULES_PER_FOLDER = 16  # "about 15", not counting __init__.py


def test_the_library_never_imports_the_reference_application() -> None:
    offenders = {
        name: sorted(m for m in imports(path, module_level_only=False) if m.split(".")[0] == "app")
        for name, path in MODULES.items()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_no_folder_holds_more_than_about_fifteen_modules() -> None:
    sizes = {
        str(folder.relative_to(ROOT)): len(
            [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        )
        for folder in [LIBRARY, *[p for p in LIBRARY.rglob("*") if p.is_dir()]]
        if folder.name != "__pycache__"
    }
    assert {folder: n for folder, n in sizes.items() if n > MAX_MODULES_PER_FOLDER} == {}
    assert sum(sizes.values()) > 100  # the walk saw the library


def test_no_import_cycle_among_the_library_modules() -> None:
    assert cycles(library_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_import_walk_sees_type_only_imports_and_the_packages_above() -> None:
    graph = library_graph()
    assert "firestore_outbox.relay.config" in graph["firestore_outbox.relay.run.relay"]
    # the ops import the relay's store: the relay package's __init__ runs first
    assert "firestore_outbox.relay" in graph["firestore_outbox.ops.held"]
    assert "firestore_outbox.relay" not in graph["firestore_outbox.relay.run.relay"]


IMPORT_EVERY_PUBLIC_NAME = """
import socket, sys
def refuse(*args, **kwargs):
    raise AssertionError(f"connected on import: {args}")
socket.socket.connect = refuse
socket.create_connection = refuse
import firestore_outbox
for name in firestore_outbox.__all__:
    assert getattr(firestore_outbox, name).__doc__, name
print(sorted(m for m in sys.modules if m == "app" or m.startswith("app.")))
"""


def printed_at_root(script: str, *options: str) -> str:
    """What `script` prints, run by a new interpreter from the repository's root (where the
    reference `app` package is importable); its failure fails the test."""
    ran = subprocess.run(
        [sys.executable, *options, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip()


def test_importing_the_library_imports_no_app_module_and_connects_to_nothing() -> None:
    assert printed_at_root(IMPORT_EVERY_PUBLIC_NAME) == "[]"


# Every module of the folders below the composition root, and their lazy exports, imported
# (a deprecated name would fail): none of them brings any part of the root in.
IMPORT_THE_FOLDERS_BELOW_THE_ROOT = """
import importlib, pkgutil, sys
import firestore_outbox
for folder in ("producer", "relay", "consumer", "idempotency", "nudge", "health", "ops"):
    package = importlib.import_module(f"firestore_outbox.{folder}")
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(module.name)
    for name in getattr(package, "__all__", ()):
        getattr(package, name)
print(sorted(m for m in sys.modules if m.startswith("firestore_outbox.config")))
"""


def test_importing_every_module_below_the_root_imports_no_part_of_it() -> None:
    printed = printed_at_root(IMPORT_THE_FOLDERS_BELOW_THE_ROOT, "-W", "error::DeprecationWarning")
    assert printed == "[]"


# The composition root, and the entry points above it that call it (and nothing else may).
COMPOSITION_ROOT = "config"
ABOVE_THE_ROOT = {"cli", "function_compute", "example", "deploy"}


def test_the_folders_import_one_way() -> None:
    graph = folder_graph()
    assert cycles(graph) == []
    assert "config" in graph["cli"]
    assert graph.get("root", set()) == set()  # the root modules import no folder


def test_nothing_below_the_composition_root_imports_it() -> None:
    graph = folder_graph()
    importers = {folder for folder, targets in graph.items() if COMPOSITION_ROOT in targets}
    assert importers - ABOVE_THE_ROOT == set()
    # and the root reaches every folder whose settings it builds
    below = reachable(graph, COMPOSITION_ROOT)
    assert {"producer", "relay", "consumer", "idempotency", "nudge", "health", "ops"} <= below
    assert below.isdisjoint(ABOVE_THE_ROOT | {COMPOSITION_ROOT})


def test_the_folder_graph_sees_every_import_that_runs_and_finds_a_loop() -> None:
    graph = folder_graph()
    # inside a function: `Configuration.relay()` imports the relay's settings in the method
    assert "relay" in graph["config"]
    # a lazy export: the consumer's face names `Receiver` in its type-only block only
    assert "firestore_outbox.consumer.receiver" in lazy_imports(
        MODULES["firestore_outbox.consumer"]
    )
    # a moved name's new place: the relay's face hands `Configuration` out from the package
    assert "firestore_outbox" in lazy_imports(MODULES["firestore_outbox.relay"])
    # a type-only block of a module without lazy exports never runs
    assert lazy_imports(MODULES["firestore_outbox.nudge.settings"]) == set()
    made_up = {"root": set(), "relay": {"root", "config"}, "config": {"relay"}, "cli": {"config"}}
    assert cycles(made_up) == [["config", "relay"]]
