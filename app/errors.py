"""The errors application code catches: the library's (`firestore_outbox.errors`), and the
order domain's own `InvalidOrder`. All share `OutboxError`; invalid input is a `ValueError`."""

from firestore_outbox.errors import *  # noqa: F403  (the library's errors, all of them)
from firestore_outbox.errors import __all__ as _library_errors
from firestore_outbox.example import InvalidOrder

__all__ = [*_library_errors, "InvalidOrder"]
