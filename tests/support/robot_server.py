"""A local DingTalk custom robot: takes JSON text messages on POST and checks each one's
signature as DingTalk documents it, computed here on its own (not with the library's code):
`timestamp` (ms) and `sign` in the query, sign = urlencode(base64(HMAC-SHA256(key=secret,
"timestamp\\nsecret"))). A bad or missing signature is refused as DingTalk refuses it: HTTP
200 with `errcode` 310000."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "robot-access-token-0123456789"


@dataclass
class Robot:
    """The server's record: messages taken (their text) and refused (why)."""

    secret: str
    taken: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alerts(self, code: str) -> list[str]:
        return [t for t in self.taken if "ALERT" in t.splitlines()[0] and f"- {code}:" in t]

    def recoveries(self, code: str) -> list[str]:
        return [t for t in self.taken if "RECOVERED" in t.splitlines()[0] and f"- {code}:" in t]


def signed_correctly(secret: str, query: dict[str, list[str]]) -> bool:
    timestamp, sign = (query.get("timestamp") or [""])[0], (query.get("sign") or [""])[0]
    digest = hmac.new(secret.encode(), f"{timestamp}\n{secret}".encode(), hashlib.sha256)
    return bool(timestamp) and hmac.compare_digest(sign, base64.b64encode(digest.digest()).decode())


class RobotServer:
    """`with RobotServer(secret) as server:` serves at `server.url` (with its access token)."""

    def __init__(self, secret: str) -> None:
        self.robot = Robot(secret)
        robot = self.robot

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)  # decodes the URL-encoded sign
                body: Any = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if (query.get("access_token") or [""])[0] != TOKEN:
                    answer = {"errcode": 300001, "errmsg": "token is not exist"}
                elif not signed_correctly(robot.secret, query):
                    answer = {"errcode": 310000, "errmsg": "sign not match"}
                else:
                    answer = {"errcode": 0, "errmsg": "ok"}
                with robot.lock:
                    if answer["errcode"] == 0:
                        robot.taken.append(body["text"]["content"])
                    else:
                        robot.refused.append(str(answer["errmsg"]))
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/robot/send?access_token={TOKEN}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RobotServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
