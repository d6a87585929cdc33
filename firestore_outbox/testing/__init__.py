"""Testing on the real Firestore emulator: `FirestoreEmulator` starts one on free ports (in a
process group of its own, stopped with it) for your tests, as this project's tests do.

    from firestore_outbox.testing import FirestoreEmulator

    with FirestoreEmulator() as emulator:
        os.environ["FIRESTORE_EMULATOR_HOST"] = emulator.host_port

Needs Java 17 and the emulator (Debian package `google-cloud-cli-firestore-emulator`, or
`FIRESTORE_EMULATOR_LAUNCHER`). Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.firestore.client import EMULATOR_DEFAULT_PROJECT
    from firestore_outbox.testing.emulator import EmulatorError, FirestoreEmulator

__all__ = ["EMULATOR_DEFAULT_PROJECT", "EmulatorError", "FirestoreEmulator"]

__getattr__ = lazy_exports(__name__)
