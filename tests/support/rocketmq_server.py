"""A local RocketMQ 5.x proxy for the tests: the gRPC `MessagingService` built from the client
package's own protos (`rocketmq.grpc_protocol`), answering what a producer needs (QueryRoute,
Heartbeat, SendMessage, Telemetry, NotifyClientTermination), checking each call's
`MQv2-HMAC-SHA1` signature with its own implementation, and keeping what it was sent.

`codes` maps an event id (the message key) to the status code its send gets instead of OK;
`route_code` makes QueryRoute answer that code; `accept` is what the topic takes (NORMAL, or
FIFO for a FIFO topic)."""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from rocketmq.grpc_protocol import definition_pb2 as d
from rocketmq.grpc_protocol import service_pb2 as s
from rocketmq.grpc_protocol import service_pb2_grpc

ACCESS_KEY, SECRET_KEY = "rmq-user", "rmq-s3cret-password"


@dataclass(frozen=True)
class Sent:
    """One message as the broker stored it."""

    topic: str
    body: bytes
    keys: list[str]
    message_group: str
    properties: dict[str, str]
    message_type: int


@dataclass
class RocketMqServer(service_pb2_grpc.MessagingServiceServicer):  # type: ignore[misc]
    """`start()` it; `endpoints` is its `host:port`, `sent` what it stored in order."""

    accept: int = d.NORMAL
    codes: dict[str, int] = field(default_factory=dict)
    route_code: int = d.OK
    sent: list[Sent] = field(default_factory=list)
    refused_signatures: int = 0
    latency: float = 0.0  # seconds before each send's answer (the benchmark's network)
    sends: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
        service_pb2_grpc.add_MessagingServiceServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def endpoints(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> RocketMqServer:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop(grace=None)

    def _signed(self, context: Any) -> bool:
        metadata = dict(context.invocation_metadata())
        stamp = metadata.get("x-mq-date-time", "")
        mac = hmac.new(SECRET_KEY.encode(), stamp.encode(), hashlib.sha1).hexdigest()
        expected = (
            f"MQv2-HMAC-SHA1 Credential={ACCESS_KEY}, SignedHeaders=x-mq-date-time, Signature={mac}"
        )
        if metadata.get("authorization") == expected:
            return True
        with self._lock:
            self.refused_signatures += 1
        return False

    def QueryRoute(self, request: Any, context: Any) -> Any:
        if not self._signed(context):
            return s.QueryRouteResponse(status=d.Status(code=d.UNAUTHORIZED, message="sig"))
        if self.route_code != d.OK:
            return s.QueryRouteResponse(status=d.Status(code=self.route_code, message="route"))
        broker = d.Broker(
            name="broker-a",
            id=0,
            endpoints=d.Endpoints(
                scheme=d.IPv4, addresses=[d.Address(host="127.0.0.1", port=self.port)]
            ),
        )
        queues = [
            d.MessageQueue(
                topic=request.topic,
                id=n,
                permission=d.READ_WRITE,
                broker=broker,
                accept_message_types=[self.accept],
            )
            for n in range(4)
        ]
        return s.QueryRouteResponse(status=d.Status(code=d.OK), message_queues=queues)

    def Heartbeat(self, request: Any, context: Any) -> Any:
        return s.HeartbeatResponse(status=d.Status(code=d.OK))

    def SendMessage(self, request: Any, context: Any) -> Any:
        time.sleep(self.latency)
        with self._lock:
            self.sends += 1
        if not self._signed(context):
            return s.SendMessageResponse(status=d.Status(code=d.UNAUTHORIZED, message="sig"))
        entries, code = [], d.OK
        for message in request.messages:
            keys = list(message.system_properties.keys)
            code = self.codes.get(keys[0] if keys else "", d.OK)
            if code == d.OK:
                with self._lock:
                    self.sent.append(
                        Sent(
                            message.topic.name,
                            message.body,
                            keys,
                            message.system_properties.message_group,
                            dict(message.user_properties),
                            message.system_properties.message_type,
                        )
                    )
            entries.append(
                s.SendResultEntry(
                    status=d.Status(code=code),
                    message_id=message.system_properties.message_id,
                    offset=len(self.sent),
                )
            )
        return s.SendMessageResponse(status=d.Status(code=code, message="send"), entries=entries)

    def Telemetry(self, request_iterator: Any, context: Any) -> Iterator[Any]:
        for command in request_iterator:
            if command.HasField("settings"):
                yield s.TelemetryCommand(status=d.Status(code=d.OK), settings=command.settings)

    def NotifyClientTermination(self, request: Any, context: Any) -> Any:
        return s.NotifyClientTerminationResponse(status=d.Status(code=d.OK))
