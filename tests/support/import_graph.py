"""The library's import graph, read from its source: which modules each module imports
(at module level, inside functions, through lazy exports), the graph of modules and of
folders, and the cycles in a graph. `tests/unit/test_package_layout.py` holds the library to
its shape with it; `tests/unit/relay/test_steps.py` the relay's steps."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from firestore_outbox._lazy import type_only_imports

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "firestore_outbox"


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


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), set()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen
