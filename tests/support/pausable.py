"""A second Firestore emulator for the whole session, for the tests that freeze Firestore
(SIGSTOP on its process group) mid-run: the suite's own emulator must keep answering, and
starting an emulator per test costs seconds of Java start-up each.

    def test_x(pausable_emulator: FirestoreEmulator) -> None:  # tests/integration/conftest.py
        settings = Settings(project_id="outbox-x", emulator_host=pausable_emulator.host_port)
        pausable_emulator.pause()  # resumed by the fixture after the test, whatever happened

Each test names a project of its own, so what a frozen run left behind, such as a settle
that lands once the emulator is resumed, reaches no other test.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator


@pytest.fixture(scope="session")
def pausable_emulator_process() -> Iterator[FirestoreEmulator]:
    with FirestoreEmulator() as emulator:
        yield emulator


@pytest.fixture(name="pausable_emulator")
def pausable_emulator(
    pausable_emulator_process: FirestoreEmulator,
) -> Iterator[FirestoreEmulator]:
    """The session's second emulator, answering again after the test (SIGCONT, then a
    request it must answer before the next test starts)."""
    try:
        yield pausable_emulator_process
    finally:
        pausable_emulator_process.resume()
        # The next test starts only once the emulator answers again.
        reset_emulator(pausable_emulator_process.host_port, "outbox-pausable-probe")
