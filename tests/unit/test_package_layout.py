"""The library's shape: one package, folders a reader can take in, no way back into `app`,
folders that import one way only (the composition root `config` on top, under only the entry
points that call it, the root modules at the bottom; every import that runs counts: at module
level, inside functions and through lazy exports), and no import cycle between modules
(type-only imports included: a cycle hidden behind `TYPE_CHECKING` is still two modules that
cannot be understood one without the other)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

from firestore_outbox._lazy import type_only_imports

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "firestore_outbox"
MAX_MODULES_PER_FOLDER = 16  # "about 15", not counting __init__.py


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(LIBRARY.rglob("*.py"))}


def imports(path: Path, *, module_level_only: bool, run_time: bool = False) -> set[str]:
    """The modules `path` imports; `module_level_only` skips imports inside functions. A
    package's `__init__` may re-export lazily (PEP 562) with type-only imports for type
    checkers: those run never, and are skipped there (everywhere with `run_time`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = (
        module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    )
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if module_level_only and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if (run_time or path.name == "__init__.py") and _type_checking_block(child):
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    candidate = f"{base}.{alias.name}"
                    found.add(candidate if candidate in MODULES else base)
            visit(child)

    visit(tree)
    return found


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in {
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    }


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


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    return found


def ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def library_graph() -> dict[str, set[str]]:
    """Module -> the library modules importing it runs: each one it names, and the packages
    above those (their `__init__` runs first), except the packages above the importer itself,
    which Python has already started before the importer runs."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        own = set(ancestors(name)) | {name}
        targets = set()
        for module in imports(path, module_level_only=True):
            if module in MODULES:
                targets |= {module, *(p for p in ancestors(module) if p not in own)}
        graph[name] = {m for m in targets if m in MODULES and m != name}
    return graph


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


def folder_of(module: str) -> str:
    """The folder of `firestore_outbox` a module belongs to: its first package below the
    library (`relay` for `relay.run.partition_drain`), or "root" for the library's own modules
    (`errors`, `fields`, `numbers`, `partitions`, ...)."""
    parts = module.split(".")
    if len(parts) == 2 and MODULES[module].name != "__init__.py":
        return "root"
    return parts[1] if len(parts) > 1 else "root"


def lazy_imports(path: Path) -> set[str]:
    """The modules a package's lazy exports import on first use: the type-only block that
    `firestore_outbox._lazy.lazy_exports` reads (with the same reader), and the new places of
    the names it hands out with a warning (its `_MOVED`, read from the imported package).
    Empty for a module that exports nothing lazily."""
    if "lazy_exports(" not in path.read_text(encoding="utf-8"):
        return set()
    found = set(type_only_imports(path).values())
    moved = getattr(importlib.import_module(module_name(path)), "_MOVED", {})
    return found | {place.rpartition(".")[0] for place in moved.values()}


def runs(path: Path) -> set[str]:
    """Every library module importing `path` may run: at module level, inside functions
    (they run when called), and through its lazy exports (they run on first use). Type-only
    imports elsewhere never run."""
    found = imports(path, module_level_only=False, run_time=True) | lazy_imports(path)
    return {module for module in found if module in MODULES}


def folder_graph() -> dict[str, set[str]]:
    """Folder -> the folders its modules import when they run (`runs`). The package's own
    `__init__` (the public surface, which names every folder, and fills `edge` with the
    composition root's loader) is left out."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if name == "firestore_outbox":
            continue
        source = folder_of(name)
        for module in runs(path):
            target = folder_of(module)
            if module != "firestore_outbox" and target != source:
                graph.setdefault(source, set()).add(target)
    return graph


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


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), set()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


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
