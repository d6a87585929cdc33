"""MNS's XML HTTP API, as far as the relay speaks it: the request signature, the message
documents of `BatchSendMessage` and `PublishMessage`, and the answers, entry by entry.

The signature (MNS API reference, "Signature"): `Authorization: MNS AccessKeyId:Signature`,
the Signature being base64 HMAC-SHA1 with the AccessKey secret over
`VERB\\nContent-MD5\\nContent-Type\\nDate\\n` + every `x-mns-*` header as `name:value\\n`
(names lower-case, sorted) + the resource (path and query).
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from dataclasses import dataclass

API_VERSION = "2015-06-06"
XMLNS = "http://mns.aliyuncs.com/doc/v1/"
CONTENT_TYPE = "text/xml;charset=UTF-8"
# MNS takes at most 16 messages per BatchSendMessage, of at most 64 KiB together (each
# message body counted as sent, base64 for a queue).
MAX_BATCH_MESSAGES = 16
MAX_BATCH_BYTES = 64 * 1024


def signature(
    method: str, resource: str, headers: Mapping[str, str], key_id: str, secret: str
) -> str:
    """The `Authorization` value of a request with these (lower-case) `headers`."""
    mns_headers = "".join(
        f"{name}:{headers[name]}\n" for name in sorted(headers) if name.startswith("x-mns-")
    )
    text = "\n".join(
        [
            method,
            headers.get("content-md5", ""),
            headers.get("content-type", ""),
            headers.get("date", ""),
            mns_headers + resource,
        ]
    )
    digest = hmac.new(secret.encode(), text.encode(), hashlib.sha1).digest()
    return f"MNS {key_id}:{base64.b64encode(digest).decode()}"


def signed_headers(
    resource: str, host: str, key_id: str, secret: str, token: str | None
) -> dict[str, str]:
    """The headers of a signed POST of an XML document to `resource`."""
    headers = {
        "host": host,
        "date": email.utils.formatdate(usegmt=True),
        "content-type": CONTENT_TYPE,
        "x-mns-version": API_VERSION,
    }
    headers["authorization"] = signature("POST", resource, headers, key_id, secret)
    if token:
        headers["security-token"] = token  # STS: sent beside the signature, not signed
    return headers


@dataclass(frozen=True)
class Message:
    """One message as MNS stores it: its body text and its user properties (strings)."""

    body: str
    properties: Mapping[str, str]


def message_element(message: Message) -> ElementTree.Element:
    """`<Message>` with `<MessageBody>` and `<UserProperties>` (each `<PropertyValue>` a
    `<Name>`, `<Value>` and `<Type>STRING</Type>`)."""
    element = ElementTree.Element("Message")
    ElementTree.SubElement(element, "MessageBody").text = message.body
    if message.properties:
        properties = ElementTree.SubElement(element, "UserProperties")
        for name, value in message.properties.items():
            entry = ElementTree.SubElement(properties, "PropertyValue")
            ElementTree.SubElement(entry, "Name").text = name
            ElementTree.SubElement(entry, "Value").text = value
            ElementTree.SubElement(entry, "Type").text = "STRING"
    return element


def document(root: ElementTree.Element) -> bytes:
    """`root` as an XML document in MNS's namespace."""
    root.set("xmlns", XMLNS)
    text: bytes = ElementTree.tostring(root, encoding="UTF-8", xml_declaration=True)
    return text


def batch_document(messages: list[Message]) -> bytes:
    """The body of a `BatchSendMessage`: `<Messages>` of `<Message>`."""
    root = ElementTree.Element("Messages")
    root.extend(message_element(message) for message in messages)
    return document(root)


@dataclass(frozen=True)
class EntryError:
    """A message MNS did not take: its `ErrorCode` and `ErrorMessage`."""

    code: str
    message: str


def batch_answer(body: bytes, count: int) -> list[EntryError | None] | None:
    """One entry per message sent, in order (None: accepted), from a `BatchSendMessage`
    answer; None when the answer is no such list of `count` entries."""
    root = _parse(body)
    if root is None or _local(root.tag) != "Messages":
        return None
    entries: list[EntryError | None] = []
    for element in root:
        fields = {_local(child.tag): (child.text or "") for child in element}
        if "ErrorCode" in fields:
            entries.append(EntryError(fields["ErrorCode"], fields.get("ErrorMessage", "")))
        elif "MessageId" in fields:
            entries.append(None)
        else:
            return None
    return entries if len(entries) == count else None


def error_code(body: bytes) -> str | None:
    """`Code` of an MNS `<Error>` answer."""
    root = _parse(body)
    if root is None or _local(root.tag) != "Error":
        return None
    for child in root:
        if _local(child.tag) == "Code":
            return child.text or None
    return None


def _parse(body: bytes) -> ElementTree.Element | None:
    # An answer comes from the endpoint we were configured with, but a proxy or a wrong URL
    # may answer anything: no DTDs or entities, which ElementTree does not expand anyway.
    try:
        return ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]
