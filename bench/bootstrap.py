"""Puts this checkout's root on `sys.path`, for the benchmarks that drive the reference
application (`app/`), which runs from the repository and is not installed with the library.
Imported first, for its effect: `import bootstrap  # noqa: F401`."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.append(ROOT)  # after site-packages: the installed library wins, as with -m
