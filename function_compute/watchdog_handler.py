"""The watchdog's Function Compute entry point (`s.yaml`:
`function_compute/watchdog_handler.handler`): the library's public handler, re-exported. A
repository of your own deploys `firestore_outbox.function_compute.watchdog_handler`."""

from firestore_outbox.function_compute import watchdog_handler as handler

__all__ = ["handler"]
