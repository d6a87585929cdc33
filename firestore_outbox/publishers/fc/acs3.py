"""Alibaba Cloud's V3 request signature, `ACS3-HMAC-SHA256`, as its documentation specifies
("V3 request structure and signature"), for the APIs that take it (Function Compute 3.0).

    CanonicalRequest = METHOD \\n CanonicalURI \\n CanonicalQueryString \\n
                       CanonicalHeaders \\n SignedHeaders \\n HashedRequestPayload
    StringToSign     = "ACS3-HMAC-SHA256" \\n hex(SHA-256(CanonicalRequest))
    Authorization    = ACS3-HMAC-SHA256 Credential=<key id>,SignedHeaders=<names>,
                       Signature=hex(HMAC-SHA256(<key secret>, StringToSign))

The canonical URI and query are percent-encoded per RFC 3986 (only `A-Za-z0-9-_.~` as they
are; a space is `%20`), the query sorted by name; the canonical headers are every signed
header, lower-cased, sorted, `name:trimmed value\\n` each; the payload hash is the hex SHA-256
of the body, also sent as `x-acs-content-sha256`. Standard library only: the SDK's signer
(alibabacloud-tea-openapi) would bring aiohttp, cryptography and a dozen more packages into
the function's package, and its client retries and times out on its own terms.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

ALGORITHM = "ACS3-HMAC-SHA256"


@dataclass(frozen=True)
class Credentials:
    """An AccessKey pair, with the STS token of a role's temporary credentials."""

    access_key_id: str
    access_key_secret: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)


def percent_encode(text: str) -> str:
    """RFC 3986: every byte of the UTF-8 text but `A-Za-z0-9-_.~` as `%XX`."""
    return quote(text, safe="-_.~")


def canonical_request(
    method: str,
    path: str,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    payload_hash: str,
) -> tuple[str, str]:
    """(the canonical request, the signed header names) of a request whose `path` is already
    percent-encoded as it is sent and whose `headers` are exactly the signed ones."""
    canonical_query = "&".join(
        f"{percent_encode(name)}={percent_encode(value)}" for name, value in sorted(query.items())
    )
    lowered = sorted((name.lower(), value.strip()) for name, value in headers.items())
    canonical_headers = "".join(f"{name}:{value}\n" for name, value in lowered)
    signed = ";".join(name for name, _ in lowered)
    text = "\n".join([method, path, canonical_query, canonical_headers, signed, payload_hash])
    return text, signed


def sign(
    method: str,
    path: str,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    body: bytes,
    credentials: Credentials,
    *,
    action: str,
    version: str,
    now: datetime.datetime | None = None,
    nonce: str | None = None,
) -> dict[str, str]:
    """`headers` plus the common ones (`x-acs-action`, `-version`, `-date`, `-signature-nonce`,
    `-content-sha256`, and the STS token) and `Authorization`: all of them but `Authorization`
    signed. `headers` must hold `host`."""
    moment = (now or datetime.datetime.now(datetime.timezone.utc)).astimezone(datetime.timezone.utc)
    payload_hash = hashlib.sha256(body).hexdigest()
    signed_headers = {
        **{name.lower(): value for name, value in headers.items()},
        "x-acs-action": action,
        "x-acs-version": version,
        "x-acs-date": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "x-acs-signature-nonce": nonce or uuid.uuid4().hex,
        "x-acs-content-sha256": payload_hash,
    }
    if credentials.security_token:
        signed_headers["x-acs-security-token"] = credentials.security_token
        signed_headers["x-acs-accesskey-id"] = credentials.access_key_id
    text, signed = canonical_request(method, path, query, signed_headers, payload_hash)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    string_to_sign = f"{ALGORITHM}\n{digest}"
    key = credentials.access_key_secret.encode("utf-8")
    signature = hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    authorization = (
        f"{ALGORITHM} Credential={credentials.access_key_id},"
        f"SignedHeaders={signed},Signature={signature}"
    )
    return {**signed_headers, "authorization": authorization}
