"""The relay's Function Compute entry point (`s.yaml`: `function_compute/relay_handler.handler`
and `.initialize`): the library's public handler, re-exported. A repository of your own
deploys `firestore_outbox.function_compute`'s directly."""

from firestore_outbox.function_compute import handler, initialize

__all__ = ["handler", "initialize"]
