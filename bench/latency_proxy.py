"""A TCP proxy that delays every chunk of bytes in each direction: a long network in a box.

The benchmark puts it in front of the Firestore emulator to play a cross-cloud link (Alibaba
Cloud to Google Cloud, about 40 ms round trip): with `delay` seconds each way, every request
and its answer cross it in `2 * delay` more. It works below gRPC and HTTP/2, on bytes: what
goes in comes out unchanged, in order, `delay` later. Each chunk waits on its own, so bytes
in flight overlap as on a real link (latency, not a bandwidth cap).

    python bench/latency_proxy.py --target 127.0.0.1:8080 --delay-ms 20

prints `127.0.0.1:PORT` and serves until its stdin closes. In code: `with DelayProxy(...)`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import threading
from types import TracebackType

_CHUNK = 64 * 1024
# Bytes queued in one direction before the reader waits: bounds memory when one side stops
# reading, as a socket buffer would.
_QUEUE_CHUNKS = 256


class DelayProxy:
    """Listens on `host`:`port` (0: a free port) and forwards each connection to
    `target_host`:`target_port`, every chunk `delay` seconds late each way. Runs on an event
    loop in a thread of its own; `with` starts and stops it."""

    def __init__(
        self,
        target_host: str,
        target_port: int,
        delay: float,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if delay < 0:
            raise ValueError(f"delay must be at least 0 seconds, got {delay}")
        self.target = (target_host, target_port)
        self.delay = delay
        self.host = host
        self.port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def host_port(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    def start(self) -> None:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        future.result(timeout=10)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> DelayProxy:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        pipes = [
            asyncio.ensure_future(self._pipe(reader, upstream_writer)),
            asyncio.ensure_future(self._pipe(upstream_reader, writer)),
        ]
        self._tasks.update(pipes)
        try:
            # A clean end of stream travels on (half-close); a reset on one side ends both.
            _, pending = await asyncio.wait(pipes, return_when=asyncio.FIRST_EXCEPTION)
            for pipe in pending:
                pipe.cancel()
            await asyncio.gather(*pipes, return_exceptions=True)
        finally:
            self._tasks.difference_update(pipes)
            for side in (writer, upstream_writer):
                side.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One direction: read chunks as they come, write each `delay` after it arrived."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(_QUEUE_CHUNKS)

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - loop.time()))
                if not chunk:  # the reader's end of stream, delayed like the bytes before it
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                chunk = await reader.read(_CHUNK)
                await queue.put((loop.time() + self.delay, chunk))
                if not chunk:
                    break
            await sender
        except (OSError, asyncio.CancelledError):
            sender.cancel()
            raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", required=True, help="host:port to forward to")
    parser.add_argument("--delay-ms", type=float, required=True, help="added each way")
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    with DelayProxy(host, int(port), args.delay_ms / 1000) as proxy:
        print(proxy.host_port, flush=True)
        sys.stdin.read()  # whoever started us closes our stdin when done


if __name__ == "__main__":
    main()
