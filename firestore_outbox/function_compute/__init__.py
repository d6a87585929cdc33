"""Deploying on Alibaba Cloud Function Compute: the relay's timer handler and an HTTP-trigger
adapter for a WSGI app, from any repository.

    # s.yaml of your own: handler: index.handler, initializer: index.initialize
    # index.py:
    from firestore_outbox.function_compute import handler, initialize

`handler(event, context)` drains due events (a timer's event, a producer's nudge or a fan-out
invocation's) and returns the run's summary; `http_handler(event, context)` is the relay behind
an (anonymous) HTTP trigger: it runs a nudge signed with `OUTBOX_NUDGE_SECRET` and answers an
HTTP response, refusing anything else before it asks Firestore (docs: the fast path);
`initialize(context)` warms the client before the first event, for either. They read the
configuration when they run, never at import. `RelayFunction` makes another such set (its own
cached relay); `HttpFunction(make_app)` serves a WSGI app of yours
(built on first request by `make_app(db, settings, idempotency_config)`) behind an HTTP
trigger. `watchdog_handler(event, context)` is the watchdog's timer handler, a function of its
own beside the relay's (`firestore_outbox.health`). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox import _quiet_python310  # noqa: F401  (its effect: see the module)
from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.function_compute.http_trigger import HttpFunction
    from firestore_outbox.function_compute.relay import (
        RelayFunction,
        handler,
        http_handler,
        initialize,
    )
    from firestore_outbox.function_compute.watchdog import watchdog_handler

__all__ = [
    "HttpFunction",
    "RelayFunction",
    "handler",
    "http_handler",
    "initialize",
    "watchdog_handler",
]

__getattr__ = lazy_exports(__name__)
