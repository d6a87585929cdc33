"""A request's fingerprint: what makes a repeat "the same request" for its key.

Method, path with its sorted query, media type, tenant and the canonical body, hashed with
SHA-256. The body is canonical so that equal requests written differently match: JSON with
sorted keys and no insignificant whitespace, form fields sorted, multipart fields sorted with
each file's name, type, size and a hash of at most its first 64 KB (a large upload is not
hashed whole). Any other body is hashed as it is, and so is a JSON body the parser refuses
(not JSON, or nested too deep): the app, not the fingerprint, judges a body, so a fingerprint
never fails.

Canonical never means lossy: requests that differ in meaning never share a fingerprint.
Form fields and queries are compared byte for byte after their escapes are decoded, whatever
the charset; a multipart body whose text is not UTF-8, or that the parser had to repair
(an undecodable byte in a name, bad base64, a missing boundary), is hashed as it is.
"""

from __future__ import annotations

import hashlib
import json
from email.message import MIMEPart
from email.parser import BytesParser
from email.policy import HTTP
from urllib.parse import parse_qsl, urlencode

FILE_HASH_BYTES = 64 * 1024


def fingerprint(
    method: str, path: str, query: str, content_type: str, tenant: str, body: bytes
) -> str:
    """The hex SHA-256 fingerprint of one request."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    parts = [
        method.upper(),
        path,
        _sorted_pairs(query),
        media_type,
        tenant,
        _canonical_body(media_type, content_type, body),
    ]
    # A JSON string may hold a lone surrogate ("\ud800"); surrogatepass gives it bytes of its
    # own instead of an error, and changes nothing for any other text.
    text = json.dumps(parts, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _sorted_pairs(text: str) -> str:
    """Query parameters or form fields, sorted, every escape decoded to its byte and encoded
    back: `%41` and `A` meet, `%E9` and `%F1` stay apart (decoded as UTF-8, both were U+FFFD).
    For valid UTF-8 the result is the one UTF-8 decoding gave, so stored records still match."""
    if max(text, default="") > "\xff":  # not one Latin-1 character a byte: back to bytes
        text = text.encode("utf-8", "surrogatepass").decode("latin-1")
    pairs = parse_qsl(text, keep_blank_values=True, encoding="latin-1")
    return urlencode(sorted(pairs), encoding="latin-1")


def _canonical_body(media_type: str, content_type: str, body: bytes) -> str:
    if media_type == "application/json" or media_type.endswith("+json"):
        try:
            value = json.loads(body)
            return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except (ValueError, RecursionError):  # not JSON, or nested too deep: compared as bytes
            return _raw(body)
    if media_type == "application/x-www-form-urlencoded":
        return _sorted_pairs(body.decode("latin-1"))
    if media_type == "multipart/form-data":
        return _multipart(content_type, body)
    return _raw(body)


def _raw(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _multipart(content_type: str, body: bytes) -> str:
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart() or message.defects:
        return _raw(body)
    fields = []
    for part in message.iter_parts():
        field = _field(part)
        if field is None:
            return _raw(body)
        fields.append(field)
    return json.dumps(sorted(fields), ensure_ascii=False)


def _field(part: MIMEPart) -> list[str] | None:
    """`[name, text]` (with its type when not plain text) or `[name, file summary]`; None
    when the part cannot be read without loss."""
    if part.is_multipart():  # nested parts: their payload would be dropped
        return None
    payload = part.get_payload(decode=True) or b""
    assert isinstance(payload, bytes)
    name = str(part.get_param("name", header="content-disposition") or "")
    filename = part.get_filename()
    if part.defects or any(getattr(value, "defects", ()) for value in part.values()):
        return None  # the parser repaired it: U+FFFD for a byte, base64 cut short, ...
    kind = part.get_content_type()
    if filename is not None:
        digest = hashlib.sha256(payload[:FILE_HASH_BYTES]).hexdigest()
        return [name, f"file:{filename}:{kind}:{len(payload)}:{digest}"]
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return None
    charset = part.get_content_charset()  # the same bytes in another charset: other text
    if charset is not None:
        kind = f"{kind}; charset={charset}"
    return [name, text] if kind == "text/plain" else [name, text, kind]
