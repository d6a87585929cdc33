"""Function Compute 3.0's InvokeFunction API, played by a local HTTP server
(`firestore_outbox.consumer.receiver`
with this responder), for the `fc3` publisher's tests.

It checks each request as Function Compute would, with an implementation of the V3 signature
of its own (written from Alibaba Cloud's "V3 request structure and signature" page, sharing
no code with `firestore_outbox.publishers.fc.acs3`): the `Authorization` header's credential, signed
headers and signature; that `host`, `content-type` and every `x-acs-*` header are signed; the body's
hash; the STS token. Then the API: the path, the function, asynchronous invocation, the task id's
rule (one made up when the caller names none), and task ids already taken (409). `script` queues
error answers to give instead; `answer_after` delays the answer to a new task (accepted, its answer
lost to a timeout).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, quote

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from tests.support.local_endpoint import RecordingResponder

_AUTHORIZATION = re.compile(
    r"ACS3-HMAC-SHA256 Credential=(?P<key>[^,]+),SignedHeaders=(?P<signed>[^,]+),"
    r"Signature=(?P<signature>[0-9a-f]{64})"
)
_PATH = re.compile(r"/2023-03-30/functions/(?P<function>[^/]+)/invocations")
_TASK_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,127}")


def error(status: int, code: str, message: str = "") -> ReceiverAnswer:
    body = json.dumps({"Code": code, "Message": message or code, "RequestId": "req-1"})
    return ReceiverAnswer(status, (("Content-Type", "application/json"),), body.encode())


@dataclass
class Invocation:
    function: str
    qualifier: str | None
    task_id: str
    body: bytes


@dataclass
class Fc3Endpoint(RecordingResponder):
    """Accepts invocations signed by `keys` (AccessKey id: secret) for `functions`."""

    keys: dict[str, str]
    functions: set[str]
    security_token: str | None = None  # required when set
    script: list[ReceiverAnswer] = field(default_factory=list)
    invocations: dict[str, Invocation] = field(default_factory=dict)  # by task id
    # Seconds to sit on the answer after taking a new task: past the client's read timeout,
    # the invocation is accepted but the caller never hears so.
    answer_after: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, request: Received) -> ReceiverAnswer:
        problem = self._authenticate(request)
        if problem is not None:
            return problem
        with self._lock:
            if self.script:
                return self.script.pop(0)
        path, _, query = request.path.partition("?")
        match = _PATH.fullmatch(path)
        if match is None:
            return error(404, "PathNotSupported")
        function = match["function"]
        if function not in self.functions:
            return error(404, "FunctionNotFound", f"function '{function}' does not exist")
        if request.headers.get("x-fc-invocation-type") != "Async":
            return error(400, "InvalidArgument", "this endpoint takes async invocations only")
        # Without a task id of the caller's, Function Compute makes one up.
        task = request.headers.get("x-fc-async-task-id", f"fc-{uuid.uuid4()}")
        if not _TASK_ID.fullmatch(task):
            return error(400, "InvalidArgument", f"invalid async task id {task!r}")
        with self._lock:
            if task in self.invocations:
                return error(409, "AsyncTaskAlreadyExist", f"task {task} already exists")
            qualifier = dict(parse_qsl(query)).get("qualifier")
            self.invocations[task] = Invocation(function, qualifier, task, request.body)
        time.sleep(self.answer_after)
        return ReceiverAnswer(202, (("x-fc-request-id", "req-1"), ("x-fc-async-task-id", task)))

    def _authenticate(self, request: Received) -> ReceiverAnswer | None:
        headers = request.headers
        found = _AUTHORIZATION.fullmatch(headers.get("authorization", ""))
        if found is None:
            return error(403, "IncompleteSignature", "no ACS3-HMAC-SHA256 authorization")
        secret = self.keys.get(found["key"])
        if secret is None:
            return error(403, "InvalidAccessKeyId", "invalid access key ID")
        signed = found["signed"].split(";")
        must = {"host", "content-type"} | {name for name in headers if name.startswith("x-acs-")}
        if not must <= set(signed) or any(name not in headers for name in signed):
            return error(400, "IncompleteSignature", "a required header is not signed")
        if headers["x-acs-content-sha256"] != hashlib.sha256(request.body).hexdigest():
            return error(400, "InvalidArgument", "x-acs-content-sha256 does not match the body")
        if self.security_token is not None and (
            headers.get("x-acs-security-token") != self.security_token
        ):
            return error(403, "InvalidSecurityToken", "the security token is invalid")
        expected = _signature(request, signed, secret)
        if not hmac.compare_digest(expected, found["signature"]):
            return error(403, "SignatureNotMatch", "the request signature does not match")
        return None


def _encode(text: str) -> str:
    # RFC 3986 unreserved characters stay; everything else, `/` included, becomes %XX.
    return "".join(
        c if c.isascii() and (c.isalnum() or c in "-_.~") else quote(c, safe="") for c in text
    )


def _signature(request: Received, signed: list[str], secret: str) -> str:
    path, _, query = request.path.partition("?")
    pairs = sorted(parse_qsl(query, keep_blank_values=True))
    lines = [
        "POST",
        path,  # as sent: already encoded by the client
        "&".join(f"{_encode(k)}={_encode(v)}" for k, v in pairs),
        "".join(f"{name}:{request.headers[name].strip()}\n" for name in sorted(signed)),
        ";".join(sorted(signed)),
        hashlib.sha256(request.body).hexdigest(),
    ]
    canonical = "\n".join(lines).encode()
    to_sign = b"ACS3-HMAC-SHA256\n" + hashlib.sha256(canonical).hexdigest().encode()
    return hmac.new(secret.encode(), to_sign, hashlib.sha256).hexdigest()
