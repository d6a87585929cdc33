"""Pins the waitress internals `firestore_outbox.idempotency.channel` relies on (it says why
waitress's public settings do not do the job): an upgrade that moves one fails here, by name;
`tests/e2e/example/test_api_limits.py` checks what they give."""

from __future__ import annotations

import pytest

from firestore_outbox.idempotency.channel import PINNED
from firestore_outbox.idempotency.server import create_server


@pytest.mark.parametrize(("owner", "name"), PINNED)
def test_every_waitress_internal_the_channel_uses_still_exists(owner: object, name: str) -> None:
    where = getattr(owner, "__qualname__", getattr(owner, "__name__", repr(owner)))
    assert hasattr(owner, name), (
        f"waitress moved {where}.{name}, which firestore_outbox/idempotency/channel.py uses"
    )


def test_a_server_still_has_the_task_dispatcher_and_socket_map_it_is_stopped_by() -> None:
    server = create_server(lambda environ, start_response: [], "127.0.0.1", 0, 1)
    try:
        assert hasattr(server._server, "task_dispatcher")
        assert server.addresses and server.addresses[0][0] == "127.0.0.1"
    finally:
        server.close()
    assert server._sockets == {}  # every socket closed and out of the map
