"""The relay's Function Compute entry points (`s.yaml`: `function_compute/relay_handler.handler`
and `.initialize` for the timer's function, `.http_handler` for the HTTP-triggered one): the
library's public handlers, re-exported. A repository of your own deploys
`firestore_outbox.function_compute`'s directly."""

from firestore_outbox.function_compute import handler, http_handler, initialize

__all__ = ["handler", "http_handler", "initialize"]
