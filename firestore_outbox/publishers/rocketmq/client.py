"""`rocketmq_client()`: the `rocketmq-python-client` package, imported once per process.

Importing the client (5.x, `rocketmq.v5.log.log_config`) creates `~/logs/rocketmq_python/`
and opens a 100 MB rotating log file there, whoever runs the relay: a developer's home, a
read-only home on Function Compute (the import then fails). The client has no setting of its
own for that directory: it is `os.path.expanduser("~/logs/rocketmq_python/")`, which follows
`HOME`, read from the process's environment.

Rewriting a process's `HOME`, even for an import, is not a library's call, so it is opt-in:
after `keep_rocketmq_out_of_home()` (the `outbox` CLI and the Function Compute relay handler
call it), `HOME` points at a private temporary directory for the import alone; the client's
file handler is then closed and removed, its logger hands its records to the root logger (JSON
lines, secrets masked, at `LOG_LEVEL`), and the directory is deleted: nothing is left anywhere.
Without it the client is imported as it is, and writes its log where it says.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import sys
import tempfile
import threading
from types import ModuleType

# The client's logger (the name its log_config configures).
CLIENT_LOGGER = "rocketmq-python-client"
_LOG_CONFIG_MODULE = "rocketmq.v5.log.log_config"
_lock = threading.Lock()
_away_from_home = False


def keep_rocketmq_out_of_home() -> None:
    """Opt in, before the RocketMQ publisher is first made: import the client with `HOME`
    pointed at a temporary directory, for a process whose entry point is yours (it rewrites
    the process's environment for the import; call it before starting threads that read it)."""
    global _away_from_home
    _away_from_home = True


def rocketmq_client() -> ModuleType:
    """The `rocketmq` package, imported once per process as the module docstring says."""
    with _lock:
        if _away_from_home and _LOG_CONFIG_MODULE not in sys.modules:
            _import_away_from_home()
        return importlib.import_module("rocketmq")


def _import_away_from_home() -> None:
    private = tempfile.mkdtemp(prefix="outbox-rocketmq-")
    home = os.environ.pop("HOME", None)  # not a setting of ours: the user's, put back below
    try:
        # Read by os.path.expanduser in the client's log_config, at import, and only there.
        os.environ["HOME"] = private
        importlib.import_module("rocketmq")  # its log_config runs now
    finally:
        if home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = home
        _adopt_client_logger()
        shutil.rmtree(private, ignore_errors=True)


def _adopt_client_logger() -> None:
    """Close the client's log file and send its records through the root logger."""
    client = logging.getLogger(CLIENT_LOGGER)
    for handler in list(client.handlers):
        client.removeHandler(handler)
        handler.close()
    client.setLevel(logging.NOTSET)  # the root's level: LOG_LEVEL
    client.propagate = True
