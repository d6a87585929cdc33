"""The console's WSGI app: access checks, routing, and one plain page for every failure.

A Firestore that does not answer ends a request within FIRESTORE_TIMEOUT_SECONDS (the
console's client is the operations commands' `ops_client`) with a 503 page that names the
host and the deadline, never a hang or a traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from google.api_core import exceptions as google_exceptions

from firestore_outbox.console import actions, jobs, pages
from firestore_outbox.console.access import COOKIE, Guard
from firestore_outbox.console.assets import CONTENT_SECURITY_POLICY, STATIC
from firestore_outbox.console.context import Context
from firestore_outbox.errors import OutboxError
from firestore_outbox.firestore.deadline import UNANSWERED, error_class, firestore_host, unanswered
from firestore_outbox.firestore.settings import Settings

logger = logging.getLogger(__name__)

Handler = Callable[[Context, pages.Query], pages.PageAnswer]
GET: dict[str, Handler] = {
    "/": pages.overview,
    "/live": pages.live,
    "/failed": pages.failed,
    "/event": pages.event,
    "/held": pages.held,
    "/requeue": actions.confirm_requeue,
    "/release": actions.confirm_release,
    "/jobs": jobs.jobs,
    "/jobs/new": jobs.confirm_job,
}
POST: dict[str, Handler] = {
    "/requeue": actions.do_requeue,
    "/release": actions.do_release,
    "/jobs/new": jobs.start,
    "/jobs/move": jobs.move,
}
MAX_FORM_BYTES = 65536
REASONS = {
    200: "OK",
    303: "See Other",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}
SIGN_IN = (
    "<p>This console asks for its token (OUTBOX_CONSOLE_TOKEN).</p>"
    "<form method=post action=/login><label>token <input type=password name=token "
    "autocomplete=current-password></label> <button type=submit>Sign in</button></form>"
)


class ConsoleApp:
    """The WSGI callable `outbox console` serves."""

    def __init__(self, ctx: Context, guard: Guard, settings: Settings) -> None:
        self.ctx, self.guard, self.settings = ctx, guard, settings

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        code, headers, body = self.answer(environ)
        headers += [
            ("Content-Length", str(len(body))),
            ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "same-origin"),  # no-referrer makes a form's Origin "null"
            ("Cache-Control", "no-store"),
        ]
        start_response(f"{code} {REASONS.get(code, '')}", headers)
        return [body]

    def answer(self, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        path, method = environ.get("PATH_INFO", "") or "/", environ.get("REQUEST_METHOD", "GET")
        if not self.guard.host_allowed(environ):
            return self._page(403, "Refused", "<p>This console answers only on loopback.</p>")
        if path in STATIC and method in ("GET", "HEAD"):
            kind, content = STATIC[path]
            return 200, [("Content-Type", kind)], content
        form: pages.Query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        if method == "POST":
            form = _form(environ)
            if path == "/login":
                return self._sign_in(form)
        if not self.guard.signed_in(environ):
            code, headers, body = self._page(401, "Sign in", SIGN_IN)
            return code, [*headers, ("WWW-Authenticate", 'Bearer realm="outbox console"')], body
        routes = POST if method == "POST" else GET if method in ("GET", "HEAD") else {}
        handler = routes.get(path)
        if handler is None:
            code = 405 if path in GET or path in POST else 404
            return self._page(code, REASONS[code], "<p>Nothing here.</p>")
        if method == "POST" and not self.guard.post_allowed(environ, form):
            text = "<p>Refused: this form is not from this console's pages (CSRF). Nothing "
            return self._page(403, "Refused", text + "was written. Reload the page.</p>")
        try:
            code, html = handler(self.ctx, form)
        except OutboxError as exc:  # bad input (an event id Firestore cannot hold, ...)
            return self._page(400, "Bad request", f"<p>{self.ctx.html.text(exc)}</p>")
        except (google_exceptions.GoogleAPIError, TimeoutError) as exc:
            return self._page(503, "Firestore unreachable", self._firestore_failure(exc))
        except Exception:
            logger.exception("console: %s %s failed", method, path)
            return self._page(500, "Failed", "<p>The console failed; its log says why.</p>")
        return code, [("Content-Type", "text/html; charset=utf-8")], html.encode()

    def _sign_in(self, form: pages.Query) -> tuple[int, list[tuple[str, str]], bytes]:
        offered = (form.get("token") or [""])[0]
        if not self.guard.token_matches(offered):
            return self._page(401, "Sign in", "<p class=error>Wrong token.</p>" + SIGN_IN)
        cookie: SimpleCookie = SimpleCookie()
        cookie[COOKIE] = offered
        cookie[COOKIE].update({"httponly": "true", "samesite": "Strict", "path": "/"})
        headers = [("Location", "/"), ("Set-Cookie", cookie[COOKIE].OutputString())]
        return 303, headers, b""

    def _firestore_failure(self, exc: BaseException) -> str:
        host = self.ctx.html.text(firestore_host(self.settings))
        if isinstance(exc, UNANSWERED):
            line = unanswered(self.settings, exc)
        elif isinstance(exc, TimeoutError):
            line = (
                f"Firestore at {firestore_host(self.settings)} did not answer within "
                f"{self.settings.firestore_timeout_seconds:g} s"
            )
        else:
            line = f"Firestore at {host} refused the request ({error_class(exc)})"
        return (
            f"<p class=error id=failure>{self.ctx.html.text(line)}</p>"
            "<p>Reload when Firestore is back. An action this interrupted may have been "
            "written in part: look at its events before repeating it.</p>"
        )

    def _page(self, code: int, title: str, body: str) -> tuple[int, list[tuple[str, str]], bytes]:
        html = self.ctx.html.page(title, body)
        return code, [("Content-Type", "text/html; charset=utf-8")], html.encode()


def _form(environ: dict[str, Any]) -> pages.Query:
    try:
        length = min(int(environ.get("CONTENT_LENGTH", "") or 0), MAX_FORM_BYTES)
    except ValueError:
        length = 0
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
