"""`outbox fc init`: a deployable skeleton for the team's own repository.

`index.py` (the relay, the watchdog and, with `--nudge http`, the HTTP-triggered relay),
`s.yaml` (their functions and triggers; secrets by `${env('...')}` reference only),
`firestore.indexes.json` and `firestore.rules` for the configured collection names,
`credentials.example` and `requirements.txt`. A file that exists is kept unless `force`.

The collection names come from the loaded configuration's own objects (the outbox's, the
partitions', the heartbeats', the re-drive jobs', the inbox's, the idempotency keys'), so the
files follow `OUTBOX_COLLECTION` and every name derived from it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from firestore_outbox.config.loader import Configuration
from firestore_outbox.deploy.requirements import default_requirement

__all__ = ["CollectionNames", "Written", "indexes", "init", "rules", "skeleton"]

NUDGES = ("off", "http")


@dataclass(frozen=True)
class CollectionNames:
    """The collections a deployment's Firestore holds, as configured."""

    outbox: str = "outbox"
    orders: str = "orders"
    partitions: str = "outbox_partitions"
    partition_modes: str = "outbox_partitions_mode"
    health: str = "outbox_health"
    redrive: str = "outbox_redrive"
    inbox: str = "inbox"
    idempotency: str = "idempotency_keys"

    @classmethod
    def configured(cls, config: Configuration) -> CollectionNames:
        """The names `config` gives (its settings objects' own, defaults included)."""
        own = config.collections  # the outbox's own collections, named after it
        return cls(
            outbox=own.outbox,
            orders=config.settings.orders_collection,
            partitions=own.partitions,
            partition_modes=own.partition_modes,
            health=own.health,
            redrive=own.redrive,
            inbox=config.receiver(verify_signatures=False).inbox_collection,
            idempotency=config.idempotency().collection,
        )

    def described(self) -> list[tuple[str, str]]:
        """Each collection with what it holds, for the rules' comments."""
        return [
            (self.outbox, "The transactional outbox: events waiting for, or done with, delivery."),
            (self.partitions, "The relay's partition leases."),
            (self.partition_modes, "The relay's lease-mode records."),
            (self.health, "The relay's heartbeats and the watchdog's incidents."),
            (self.redrive, "Re-drive jobs (`outbox replay`)."),
            (self.inbox, "The consumers' inbox: ids of events already handled."),
            (self.orders, "The reference order application's orders (ORDERS_COLLECTION)."),
            (self.idempotency, "Idempotency keys and their stored answers (may hold orders)."),
        ]


def _template(name: str) -> str:
    return files("firestore_outbox.deploy").joinpath("templates").joinpath(name).read_text()


def indexes(names: CollectionNames) -> dict[str, Any]:
    """The composite indexes and field overrides the relay and the commands need, on
    `names.outbox` (the shipped file's definitions, renamed)."""
    definitions: dict[str, Any] = json.loads(_template("firestore.indexes.json"))
    for entry in (*definitions["indexes"], *definitions["fieldOverrides"]):
        entry["collectionGroup"] = names.outbox
    return definitions


def rules(names: CollectionNames) -> str:
    """Security rules denying client access to every one of `names`."""
    blocks = []
    for collection, purpose in dict(names.described()).items():
        blocks.append(
            f"    // {purpose}\n    match /{collection}/{{documentId}} {{\n"
            "      allow read, write: if false;\n    }\n"
        )
    return _template("firestore.rules.in").replace("@@COLLECTIONS@@", "\n".join(blocks))


def skeleton(config: Configuration, *, name: str, nudge: str = "off") -> dict[str, str]:
    """Each file's name and text, for a project called `name`."""
    if nudge not in NUDGES:
        raise ValueError(f"nudge must be one of {', '.join(NUDGES)}, got {nudge!r}")
    names = CollectionNames.configured(config)
    http = nudge == "http"
    exported = ["handler", "initialize", "watchdog_handler", *(["http_handler"] if http else [])]
    values = {
        "NAME": name,
        "OUTBOX": names.outbox,
        "PARTITIONS": str(config.partitions().count),
        "NUDGE": nudge,
        "LIBRARY": default_requirement(),
        "IMPORTS": ", ".join(sorted(exported)),
        "ALL": ", ".join(f'"{e}"' for e in sorted(exported)),
        "HTTP_DOC": ",\n`http_handler` (the relay behind an HTTP trigger, for signed nudges)"
        if http
        else "",
        "HTTP_SUMMARY": ", and the relay behind an HTTP trigger for nudges" if http else "",
        "HTTP_RELAY": _template("s.http.yaml.in") if http else "",
        "HTTP_NAME": f"# RELAY_HTTP_FUNCTION_NAME={name}-relay-http\n" if http else "",
        "HTTP_SETTINGS": "# The secret producers sign HTTP nudges with, and the HTTP relay checks\n"
        "# (Standard Webhooks); producers POST to OUTBOX_NUDGE_URL, the trigger's URL.\n"
        "OUTBOX_NUDGE_SECRET=whsec_...\n# OUTBOX_NUDGE_URL=https://...fcapp.run/\n"
        if http
        else "",
    }

    def fill(template: str) -> str:
        text = re.sub(r"@@([A-Z_]+)@@", lambda m: values[m.group(1)], _template(template))
        return text.rstrip("\n") + "\n"

    return {
        "index.py": fill("index.py.in"),
        "s.yaml": fill("s.yaml.in"),
        "firestore.indexes.json": json.dumps(indexes(names), indent=2) + "\n",
        "firestore.rules": rules(names),
        "credentials.example": fill("credentials.example.in"),
        "requirements.txt": fill("requirements.txt.in"),
    }


@dataclass(frozen=True)
class Written:
    """What `init` wrote and what it kept as it was."""

    written: list[str]
    skipped: list[str]


def init(
    config: Configuration, directory: Path, *, nudge: str = "off", force: bool = False
) -> Written:
    """Write the skeleton into `directory` (made if missing); an existing file is kept
    unless `force`."""
    name = re.sub(r"[^a-z0-9-]+", "-", directory.resolve().name.lower()).strip("-")
    name = name if name[:1].isalpha() else f"fc-{name}"  # a function name starts with a letter
    texts = skeleton(config, name=name, nudge=nudge)
    directory.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    for filename, text in texts.items():
        target = directory / filename
        if target.exists() and not force:
            skipped.append(filename)
            continue
        target.write_text(text)
        written.append(filename)
    return Written(written, skipped)
