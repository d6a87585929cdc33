"""A local MNS endpoint for the tests: queue `BatchSendMessage` and topic `PublishMessage`
as MNS's XML API answers them, each request's signature checked with the Alibaba Cloud MNS
SDK's own code (`mns.mns_client.MNSClient.get_signature`), independent of ours.

Scripted failures: `entry_errors` maps an event id to the `ErrorCode` its entry gets (the
batch is then answered 500, the other entries accepted, as MNS does); `request_error` answers
the whole request with `(status, code)` instead."""

from __future__ import annotations

import base64
import hashlib
import itertools
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field

from mns.auth import Credentials
from mns.mns_client import MNSClient

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from tests.support.local_endpoint import LocalEndpoint

XMLNS = "http://mns.aliyuncs.com/doc/v1/"
KEY_ID, SECRET, TOKEN = "LTAI-test-key", "mns-s3cret-value", "sts-t0ken-value"


@dataclass(frozen=True)
class Stored:
    """One message as a consumer would receive it: body text and user properties."""

    destination: str  # /queues/Q or /topics/T
    body: str
    properties: dict[str, str]

    @property
    def event_id(self) -> str:
        return self.properties["ce_id"]


@dataclass
class MnsServer(LocalEndpoint):
    """`start()` it; `endpoint` is its URL, `stored` what it accepted, `batches` the ids of
    each request in order."""

    entry_errors: dict[str, str] = field(default_factory=dict)
    request_error: tuple[int, str] | None = None
    stored: list[Stored] = field(default_factory=list)
    batches: list[list[str]] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._ids = itertools.count(1)
        self._signer = MNSClient("http://127.0.0.1", credentials_provider=_Provider())

    def handle(self, request: Received) -> ReceiverAnswer:
        with self._lock:
            self.requests.append(request)
        expected = self._signer.get_signature(
            "POST", request.headers, request.path, Credentials(KEY_ID, SECRET)
        )
        if request.headers.get("authorization") != expected:
            return _error(403, "SignatureDoesNotMatch", "the signature does not match")
        if request.headers.get("security-token") != TOKEN:
            return _error(403, "InvalidSecurityToken", "bad token")
        if request.headers.get("x-mns-version") != "2015-06-06":
            return _error(400, "InvalidArgument", "x-mns-version")
        if self.request_error is not None:
            status, code = self.request_error
            return _error(status, code, f"scripted {code} for key {SECRET}")
        destination = request.path.removesuffix("/messages")
        root = ElementTree.fromstring(request.body)
        if root.tag == f"{{{XMLNS}}}Messages":
            return self._batch(destination, list(root))
        if root.tag == f"{{{XMLNS}}}Message":
            [answer] = self._accept(destination, [root])
            code = answer[0]
            if code:
                return _error(500, code, "scripted")
            return _xml(201, f'<Message xmlns="{XMLNS}">{answer[1]}</Message>')
        return _error(400, "MalformedXML", "not a message")

    def _batch(self, destination: str, messages: list[ElementTree.Element]) -> ReceiverAnswer:
        if not 1 <= len(messages) <= 16:
            return _error(400, "InvalidArgument", "1 to 16 messages")
        entries = self._accept(destination, messages)
        items = "".join(
            f"<Message><ErrorCode>{code}</ErrorCode><ErrorMessage>no</ErrorMessage></Message>"
            if code
            else f"<Message>{accepted}</Message>"
            for code, accepted in entries
        )
        status = 500 if any(code for code, _ in entries) else 201
        return _xml(status, f'<Messages xmlns="{XMLNS}">{items}</Messages>')

    def _accept(
        self, destination: str, messages: list[ElementTree.Element]
    ) -> list[tuple[str, str]]:
        """Per message: (error code, "") when refused, ("", its MessageId XML) when stored."""
        answers, ids = [], []
        for message in messages:
            body = message.findtext(f"{{{XMLNS}}}MessageBody") or ""
            properties = {
                (p.findtext(f"{{{XMLNS}}}Name") or ""): (p.findtext(f"{{{XMLNS}}}Value") or "")
                for p in message.iter(f"{{{XMLNS}}}PropertyValue")
            }
            stored = Stored(destination, body, properties)
            ids.append(stored.event_id)
            code = self.entry_errors.get(stored.event_id, "")
            if code:
                answers.append((code, ""))
                continue
            with self._lock:
                self.stored.append(stored)
            md5 = hashlib.md5(body.encode()).hexdigest().upper()
            answers.append(
                (
                    "",
                    f"<MessageId>{next(self._ids)}</MessageId><MessageBodyMD5>{md5}</MessageBodyMD5>",
                )
            )
        with self._lock:
            self.batches.append(ids)
        return answers

    def payload(self, stored: Stored) -> bytes:
        """The event's JSON as a queue consumer decodes it (base64), or a topic's as it is."""
        if stored.destination.startswith("/queues/"):
            return base64.b64decode(stored.body)
        return stored.body.encode()


class _Provider:
    def get_credentials(self) -> Credentials:
        return Credentials(KEY_ID, SECRET, TOKEN)


def _xml(status: int, text: str) -> ReceiverAnswer:
    body = ('<?xml version="1.0" encoding="UTF-8"?>' + text).encode()
    return ReceiverAnswer(status, (("Content-Type", "text/xml"),), body)


def _error(status: int, code: str, message: str) -> ReceiverAnswer:
    return _xml(
        status,
        f'<Error xmlns="{XMLNS}"><Code>{code}</Code><Message>{message}</Message>'
        "<RequestId>r-1</RequestId><HostId>h</HostId></Error>",
    )
