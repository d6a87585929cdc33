"""What both Function Compute publishers (`fc`, FC 2.0's API; `fc3`, FC 3.0's) share: the
event as one structured CloudEvent, and how Function Compute's error answers are read."""

from __future__ import annotations

import json
import re

from firestore_outbox.publishers.base import Delivery, cloudevent_attributes
from firestore_outbox.signing import Signature, Signer

# Function Compute's error codes that say the invocation cannot work however often it is tried
# (credentials, permission, a clock too far off, a service, function, version or alias that is
# not there), whatever the status.
CHANNEL_ERRORS = frozenset(
    {
        "AccessDenied",
        "InvalidAccessKeyId",
        "InvalidAccessKeyID",
        "SignatureNotMatch",
        "SignatureDoesNotMatch",
        "IncompleteSignature",
        "InvalidSecurityToken",
        "SecurityTokenExpired",
        "RequestTimeTooSkewed",
        "ServiceNotFound",
        "FunctionNotFound",
        "AliasNotFound",
        "VersionNotFound",
        "QualifierNotFound",
        "ResourceNotFound",
    }
)
# FC 2.0 answers `{"ErrorCode": ...}`, FC 3.0 `{"Code": ...}`; the documents also spell them in
# lower camel case.
_CODE = re.compile(r'"(?:Code|code|ErrorCode|errorCode)"\s*:\s*"([A-Za-z.]+)"')


def structured_cloudevent(delivery: Delivery, signature: Signature | None = None) -> bytes:
    """The delivery as one CloudEvents 1.0 JSON document, its data spliced in unparsed, last;
    with `signature`, its Standard Webhooks attributes (`webhookid`, ...) beside the others.
    An event function sees no HTTP headers: everything travels in the body."""
    envelope = cloudevent_attributes(delivery)
    if signature is not None:
        envelope.update(signature.attributes())
    head = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))[:-1]
    return head.encode() + b',"data":' + delivery.body + b"}"


def signed_cloudevent(delivery: Delivery, signer: Signer | None) -> bytes:
    """`structured_cloudevent` of `delivery`, signed over its attributes when `signer` is set."""
    signature = None
    if signer is not None:
        signature = signer.sign(cloudevent_attributes(delivery), delivery.body)
    return structured_cloudevent(delivery, signature)


def error_code(excerpt: str) -> str | None:
    """The error code of a Function Compute error body, found even in an excerpt cut short."""
    match = _CODE.search(excerpt)
    return match.group(1) if match else None
