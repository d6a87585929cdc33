"""Imported for its effect by the library's own entry points (the `outbox` command and the
Function Compute handlers), never by `import firestore_outbox`: google-api-core warns once, on
import and straight to stderr, that Python 3.10 is past Google's support. 3.10 is Function
Compute's runtime, chosen on purpose (docs: Deploy), and a plain text line there would break
the function's JSON logs, so these entry points silence that one notice. An application of
your own keeps Python's warnings as it set them."""

from __future__ import annotations

import warnings

warnings.filterwarnings(
    "ignore", category=FutureWarning, module=r"google\.api_core\._python_version_support"
)
