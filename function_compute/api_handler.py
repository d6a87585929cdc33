"""The order API as an HTTP-triggered Function Compute function (`s.yaml`:
`function_compute/api_handler.handler` and `.initialize`): the example order API served by
the library's public HTTP-trigger adapter."""

from firestore_outbox.example import make_api
from firestore_outbox.function_compute import HttpFunction

__all__ = ["handler", "initialize"]

_function = HttpFunction(make_api)
handler = _function.handler
initialize = _function.initialize
