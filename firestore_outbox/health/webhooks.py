"""The watchdog's webhook: one message per alert or recovery, in the format the receiver
reads, signed as it asks.

- `json`: `{"source", "state": "alert" | "recovered", "problems": [{"code", "message"}],
  "text"}` with CloudEvents `ce-*` headers (type `firestore-outbox.watchdog.alert` or
  `.recovered`); with `WATCHDOG_WEBHOOK_SECRET` it is signed like a delivery (Standard
  Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`, `firestore_outbox.signing`):
  `firestore_outbox.consumer`'s verification accepts it.
- `dingtalk`: a custom robot's text message; with a secret, the robot's signing: `timestamp`
  (milliseconds) and `sign` = Base64(HMAC-SHA256(key=secret, "timestamp\\nsecret")) added to the
  URL's query. The robot answers 200 with `errcode` 0 when it took the message.
- `lark` (Feishu): a custom bot's text message; with a secret, `timestamp` (seconds) and
  `sign` = Base64(HMAC-SHA256(key="timestamp\\nsecret", empty message)) in the body. It answers
  `code` 0 when it took the message.

The URL (a robot's access token is in it) and the secret are secrets: masked in logs and
previews (`Configuration.SECRET_VARIABLES`); an error says what failed, never the URL.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from firestore_outbox.health.settings import WatchdogSettings, WebhookFormat
from firestore_outbox.signing import Signer

__all__ = ["WebhookFailed", "dingtalk_sign", "lark_sign", "post_alert"]

SOURCE = "firestore-outbox watchdog"


class WebhookFailed(Exception):
    """The webhook did not take the message; the text names why, never the URL."""


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """DingTalk's custom robot signature (URL-encoded for the query)."""
    mac = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256)
    return quote(base64.b64encode(mac.digest()).decode(), safe="")


def lark_sign(secret: str, timestamp_s: int) -> str:
    """Lark's (Feishu's) custom bot signature: the key is "timestamp\\nsecret"."""
    mac = hmac.new(f"{timestamp_s}\n{secret}".encode(), b"", hashlib.sha256)
    return base64.b64encode(mac.digest()).decode()


def message(state: str, problems: Sequence[tuple[str, str]]) -> str:
    heading = "ALERT" if state == "alert" else "RECOVERED"
    lines = [f"[{SOURCE}] {heading}"] + [f"- {code}: {text}" for code, text in problems]
    return "\n".join(lines)


def post_alert(settings: WatchdogSettings, state: str, problems: Sequence[tuple[str, str]]) -> None:
    """Send one message (`state`: alert or recovered) about `problems` (code, message);
    `WebhookFailed` when it was not taken, within `settings.timeout_seconds`."""
    assert settings.webhook_url is not None
    url, secret, text = settings.webhook_url, settings.webhook_secret, message(state, problems)
    headers = {"Content-Type": "application/json"}
    body: dict[str, Any]
    if settings.webhook_format is WebhookFormat.DINGTALK:
        body = {"msgtype": "text", "text": {"content": text}}
        if secret:
            now = int(time.time() * 1000)
            url += (
                "&" if "?" in url else "?"
            ) + f"timestamp={now}&sign={dingtalk_sign(secret, now)}"
    elif settings.webhook_format is WebhookFormat.LARK:
        body = {"msg_type": "text", "content": {"text": text}}
        if secret:
            now = int(time.time())
            body.update(timestamp=str(now), sign=lark_sign(secret, now))
    else:
        body = {
            "source": SOURCE,
            "state": state,
            "problems": [{"code": code, "message": text} for code, text in problems],
            "text": text,
        }
    data = json.dumps(body, ensure_ascii=False).encode()
    if settings.webhook_format is WebhookFormat.JSON:
        attributes = _attributes(state, problems)
        headers.update({f"ce-{k}": v for k, v in attributes.items() if k != "datacontenttype"})
        if secret:
            headers.update(Signer([secret]).sign(attributes, data).headers())
    _post(url, data, headers, settings)


def _attributes(state: str, problems: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The message's CloudEvents attributes (sent as `ce-*` headers, and signed)."""
    return {
        "specversion": "1.0",
        "id": uuid.uuid4().hex,
        "source": "firestore-outbox/watchdog",
        "type": f"firestore-outbox.watchdog.{state}",
        "subject": ",".join(code for code, _ in problems),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "datacontenttype": "application/json",
    }


def _post(url: str, data: bytes, headers: dict[str, str], settings: WatchdogSettings) -> None:
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout_seconds) as answer:
            status, raw = answer.status, answer.read(65536)
    except urllib.error.HTTPError as exc:
        raise WebhookFailed(f"the webhook answered {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise WebhookFailed(f"the webhook could not be reached ({type(exc).__name__})") from None
    if not 200 <= status < 300:
        raise WebhookFailed(f"the webhook answered {status}")
    if settings.webhook_format is WebhookFormat.JSON:
        return
    try:
        answer_json = json.loads(raw or b"{}")
    except ValueError:
        answer_json = {}
    code = (
        answer_json.get("errcode", answer_json.get("code", 0))
        if isinstance(answer_json, dict)
        else 0
    )
    if code not in (0, None):
        raise WebhookFailed(f"the robot refused the message (code {code})")
