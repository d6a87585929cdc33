"""Function Compute 3.0's HTTP trigger, played: a request as the event it hands a built-in
runtime's handler (`http_event`: its documented fields, header names capitalised as FC does),
and the handler's response struct back as an HTTP answer (`answer_of`)."""

from __future__ import annotations

import base64
import json
from typing import Any

from firestore_outbox.consumer.receiver import ReceiverAnswer


def http_event(
    method: str, path: str, body: bytes = b"", binary: bool = False, **headers: str
) -> bytes:
    """An HTTP trigger event as Function Compute 3.0 documents it, as the bytes it passes;
    `headers` given with `_` for `-` (`webhook_id=...`) or as they are."""
    named = {"content-type": "application/json", **headers}
    return json.dumps(
        {
            "version": "v1",
            "rawPath": path,
            "body": base64.b64encode(body).decode() if binary else body.decode(),
            "isBase64Encoded": binary,
            # FC capitalises each word of a header's name (`Webhook-Id`).
            "headers": {_capitalised(name): value for name, value in named.items()},
            "queryParameters": {},
            "requestContext": {
                "accountId": "123456789",
                "domainName": "abc.cn-hangzhou.fcapp.run",
                "domainPrefix": "abc",
                "http": {
                    "method": method,
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "11.11.11.11",
                    "userAgent": "test",
                },
                "requestId": "1-64f6cd87-0000",
                "time": "2023-09-05T06:41:11Z",
                "timeEpoch": "1693896071895",
            },
        }
    ).encode()


def answer_of(response: dict[str, Any]) -> ReceiverAnswer:
    """The HTTP answer Function Compute makes of a handler's response struct."""
    raw = response.get("body") or ""
    body = base64.b64decode(raw) if response.get("isBase64Encoded") else str(raw).encode()
    headers = tuple((name, str(value)) for name, value in (response.get("headers") or {}).items())
    return ReceiverAnswer(int(response["statusCode"]), headers, body)


def _capitalised(name: str) -> str:
    return "-".join(part.capitalize() for part in name.replace("_", "-").split("-"))
