"""Function Compute 2.0's invoke API (`POST /2016-08-15/services/S/functions/F/invocations`),
played by a local HTTP server (`firestore_outbox.consumer.receiver` with this responder), for the
benchmark.

It checks each request's `FC` signature with its own implementation of the documented recipe
(HMAC-SHA256 over the verb, Content-MD5, Content-Type, Date, the sorted `x-fc-*` headers and
the path), sharing no code with the publisher's signer (`fc2.auth.Auth`), and the STS token;
then the path and the function. An accepted invocation is answered 202, as an asynchronous
one is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
from dataclasses import dataclass, field

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from tests.support.local_endpoint import RecordingResponder

_PATH = re.compile(
    r"/2016-08-15/services/(?P<service>[^/]+)/functions/(?P<function>[^/]+)/invocations"
)


def error(status: int, code: str, message: str = "") -> ReceiverAnswer:
    body = json.dumps({"ErrorCode": code, "ErrorMessage": message or code})
    return ReceiverAnswer(status, (("Content-Type", "application/json"),), body.encode())


def signature(request: Received, key_id: str, secret: str) -> str:
    """The `Authorization` header FC 2.0 expects for `request`."""
    h = request.headers
    fc_headers = "".join(f"{k}:{h[k]}\n" for k in sorted(h) if k.startswith("x-fc-"))
    head = ["POST", h.get("content-md5", ""), h.get("content-type", ""), h.get("date", "")]
    text = "\n".join([*head, fc_headers + request.path])
    digest = hmac.new(secret.encode(), text.encode(), hashlib.sha256).digest()
    return f"FC {key_id}:{base64.b64encode(digest).decode()}"


@dataclass
class FcEndpoint(RecordingResponder):
    """Accepts invocations signed by `keys` (AccessKey id: secret) of `functions` (service,
    function), counting them in `invocations`."""

    CODE = "ErrorCode"

    keys: dict[str, str]
    functions: set[tuple[str, str]]
    security_token: str | None = None  # required when set
    invocations: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: Received) -> ReceiverAnswer:
        key_id, _, _ = request.headers.get("authorization", "").removeprefix("FC ").partition(":")
        secret = self.keys.get(key_id)
        if secret is None:
            return error(403, "InvalidAccessKeyID", "invalid access key ID")
        if not hmac.compare_digest(
            request.headers["authorization"], signature(request, key_id, secret)
        ):
            return error(403, "SignatureNotMatch", "the request signature does not match")
        if self.security_token is not None and (
            request.headers.get("x-fc-security-token") != self.security_token
        ):
            return error(403, "InvalidSecurityToken", "the security token is invalid")
        match = _PATH.fullmatch(request.path)
        if match is None:
            return error(404, "PathNotSupported")
        service = match["service"].partition(".")[0]  # SERVICE.QUALIFIER
        if (service, match["function"]) not in self.functions:
            return error(404, "FunctionNotFound", f"function {match['function']!r} does not exist")
        with self._lock:
            self.invocations += 1
        return ReceiverAnswer(202, (("x-fc-request-id", "req-1"),))
