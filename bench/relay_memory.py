"""Peak memory of one `Relay.run()` over whatever backlog the outbox holds, in a process of
its own so that nothing else counts: prints `{"maxRssKb": ..., "processed": ...}`.

    python bench/relay_memory.py EMULATOR_HOST PROJECT DOWNSTREAM_URL SECONDS
"""

from __future__ import annotations

import json
import resource
import sys

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.relay import Relay, RelayConfig


def main() -> None:
    host, project, url, seconds = sys.argv[1:5]
    settings = Settings(project_id=project, emulator_host=host)
    # A short HTTP timeout keeps the room a run leaves for its last attempt small.
    config = RelayConfig(publisher=HttpSettings(url=url), http_timeout_seconds=1.0)
    budget = float(seconds) + config.attempt_seconds
    summary = Relay(get_db_client(settings), settings, config).run(time_budget=budget)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"maxRssKb": peak, "processed": summary["processed"]}))


if __name__ == "__main__":
    main()
