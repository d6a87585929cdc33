"""MkDocs hook: the reference pages are generated from the code, so they cannot drift.

- `reference/configuration.md`: the table of every environment variable, from
  `firestore_outbox.config.variables.VARIABLES` (tests/unit/test_docs.py checks that every
  variable the code reads is on the built page).
- `reference/api.md`: one mkdocstrings block per name of `firestore_outbox.__all__`, pointing
  at the module that defines it (the package's exports are lazy, so a static reader would
  not see them through `firestore_outbox` itself).
- the benchmark's plots (`bench/results/*.png`) are published beside the performance page
  without being copied into docs/.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
VARIABLES_MARK = "<!-- generated: variables -->"
API_MARK = "<!-- generated: api -->"


def on_files(files: Files, config: Any) -> Files:
    for plot in sorted((ROOT / "bench" / "results").glob("*.png")):
        files.append(
            File(
                f"bench/results/{plot.name}",
                src_dir=str(ROOT),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if VARIABLES_MARK in markdown:
        markdown = markdown.replace(VARIABLES_MARK, variables_table())
    if API_MARK in markdown:
        markdown = markdown.replace(API_MARK, api_blocks())
    return markdown


def variables_table() -> str:
    from firestore_outbox.config.variables import VARIABLES

    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| {v.names} | {v.default} | {v.meaning} |" for v in VARIABLES]
    return "\n".join(rows)


def api_blocks() -> str:
    """One section per public module (`firestore_outbox._lazy.PUBLIC_MODULES`); a name
    exported by several is documented in the first section that exports it."""
    from firestore_outbox._lazy import PUBLIC_MODULES

    done: dict[int, str] = {}
    sections = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        summary = (module.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        lines = [f"## `{module_name}`\n", f"{summary}\n"]
        for name in sorted(module.__all__, key=str.lower):
            obj = getattr(module, name)
            where = getattr(obj, "__module__", None)
            if not callable(obj) or not where:
                lines.append(
                    f"- `{name}`: `{obj!r}`" if isinstance(obj, (str, int)) else f"- `{name}`"
                )
                continue
            if id(obj) in done:
                lines.append(f"- `{name}`: see `{done[id(obj)]}`")
                continue
            done[id(obj)] = f"{module_name}.{name}"
            lines.append(f"\n::: {where}.{getattr(obj, '__qualname__', name)}\n")
        sections.append("\n".join(lines))
    return "\n\n".join(sections)
