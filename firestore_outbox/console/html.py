"""The console's HTML: every value goes through `Html.text`, which masks each configured
secret and then escapes, so a payload holding `<script>` shows as text and no secret that
found its way into a document is shown."""

from __future__ import annotations

import datetime
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from firestore_outbox.masking import masker
from firestore_outbox.relay.events import encode_json

NAV = (("/", "Overview"), ("/failed", "Failed"), ("/held", "Held"), ("/jobs", "Re-drive"))


@dataclass(frozen=True)
class Html:
    """Builds pages for one console: `secrets` are masked, `csrf` goes into every form."""

    secrets: tuple[str, ...]
    csrf: str

    def text(self, value: Any) -> str:
        """`value` as escaped text: timestamps in RFC 3339, maps and lists as JSON."""
        if isinstance(value, datetime.datetime):
            shown = value.isoformat(sep=" ", timespec="milliseconds")
        elif isinstance(value, (dict, list)):
            shown = encode_json(value, indent=2).decode()
        else:
            shown = "" if value is None else str(value)
        return html.escape(masker(self.secrets)(shown), quote=True)

    def page(self, title: str, body: str, *, status: str = "") -> str:
        nav = " ".join(f'<a href="{href}">{name}</a>' for href, name in NAV)
        return (
            "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>{self.text(title)} · outbox console</title>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            '<link rel=stylesheet href="/static/console.css">'
            '<script src="/static/live.js" defer></script></head>'
            f"<body><header><strong>outbox console</strong> <nav>{nav}</nav>"
            f"<span class=status>{self.text(status)}</span></header>"
            f"<main><h1>{self.text(title)}</h1>{body}</main></body></html>\n"
        )

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[str]], **attrs: str) -> str:
        """A table of cells already made HTML (pass values through `text` or `link`)."""
        extra = "".join(f' {k.replace("_", "-")}="{self.text(v)}"' for k, v in attrs.items())
        head = "".join(f"<th>{self.text(h)}</th>" for h in headers)
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table{extra}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def link(self, path: str, label: Any, **query: str) -> str:
        href = path + (f"?{urlencode(query)}" if query else "")
        return f'<a href="{html.escape(href, quote=True)}">{self.text(label)}</a>'

    def form(
        self, action: str, button: str, fields: Iterable[tuple[str, str]] = (), **attrs: str
    ) -> str:
        """A POST form carrying the CSRF token and `fields` as hidden inputs."""
        hidden = "".join(
            f'<input type=hidden name="{self.text(n)}" value="{self.text(v)}">'
            for n, v in [("csrf", self.csrf), *fields]
        )
        extra = "".join(f' {k.replace("_", "-")}="{self.text(v)}"' for k, v in attrs.items())
        return (
            f'<form method=post action="{self.text(action)}"{extra}>{hidden}'
            f"<button type=submit>{self.text(button)}</button></form>"
        )
