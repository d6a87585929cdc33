"""The order API with a test-only hook: its first commit waits while a hold file exists.

Environment: API_TEST_HOLD (path: the first commit waits, at most 60 s, while it exists) and
API_TEST_ENTERED (path: created when the first commit reaches the hook, lock held). Used to
kill a server between the lock and the commit, or to let a lock be taken over meanwhile.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from app.api import make_api
from firestore_outbox.config.shortcuts import load_idempotency_config, load_settings
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.idempotency.server import create_server

_first = threading.Lock()


def hold_first_commit() -> None:
    if not _first.acquire(blocking=False):
        return  # only the first commit of the process is held
    Path(os.environ["API_TEST_ENTERED"]).touch()
    hold = Path(os.environ["API_TEST_HOLD"])
    ends = time.monotonic() + 60
    while hold.exists() and time.monotonic() < ends:
        time.sleep(0.02)


def main() -> None:
    settings = load_settings()
    config = load_idempotency_config()
    app = make_api(get_db_client(settings), settings, config, before_commit=hold_first_commit)
    server = create_server(app, "127.0.0.1", 0, 8, max_body_bytes=config.max_request_bytes)
    print(f"listening on http://127.0.0.1:{server.effective_port}", flush=True)
    server.run()


if __name__ == "__main__":
    main()
