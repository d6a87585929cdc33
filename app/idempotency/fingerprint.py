"""A request's fingerprint: what makes a repeat "the same request" for its key.

Method, path with its sorted query, media type, tenant and the canonical body, hashed with
SHA-256. The body is canonical so that equal requests written differently match: JSON with
sorted keys and no insignificant whitespace, form fields sorted, multipart fields sorted with
each file's name, type, size and a hash of at most its first 64 KB (a large upload is not
hashed whole). Any other body is hashed as it is.
"""

from __future__ import annotations

import hashlib
import json
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
        _sorted_query(query),
        media_type,
        tenant,
        _canonical_body(media_type, content_type, body),
    ]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def _sorted_query(query: str) -> str:
    return urlencode(sorted(parse_qsl(query, keep_blank_values=True)))


def _canonical_body(media_type: str, content_type: str, body: bytes) -> str:
    if media_type == "application/json" or media_type.endswith("+json"):
        try:
            value = json.loads(body)
        except ValueError:  # not JSON after all: compared as bytes
            return _raw(body)
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if media_type == "application/x-www-form-urlencoded":
        text = body.decode("latin-1")
        return urlencode(sorted(parse_qsl(text, keep_blank_values=True)))
    if media_type == "multipart/form-data":
        return _multipart(content_type, body)
    return _raw(body)


def _raw(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _multipart(content_type: str, body: bytes) -> str:
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        return _raw(body)
    fields = []
    for part in message.iter_parts():
        payload = part.get_payload(decode=True) or b""
        assert isinstance(payload, bytes)
        name = str(part.get_param("name", header="content-disposition") or "")
        filename = part.get_filename()
        if filename is None:
            fields.append([name, payload.decode("utf-8", "replace")])
        else:
            digest = hashlib.sha256(payload[:FILE_HASH_BYTES]).hexdigest()
            kind = part.get_content_type()
            fields.append([name, f"file:{filename}:{kind}:{len(payload)}:{digest}"])
    return json.dumps(sorted(fields), ensure_ascii=False)
