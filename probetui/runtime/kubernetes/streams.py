"""Reach a pod through the API server: port-forward and exec over `v4.channel.k8s.io` websockets.

kubernetes-asyncio 36 has exec (`WsApiClient`) but no port-forward helper, so both are here,
small and over the same websocket, opened through the library's `CoreV1Api.connect_get_*` calls
so that authentication and the read-only guard apply exactly as for every other request.

Channel protocol (v4): every binary message starts with one byte naming the channel.
- portforward, port i of the `ports` list: data on channel 2i, errors on channel 2i+1. The first
  message on each channel carries the port number, 2 bytes little-endian, and no data.
- exec: stdin 0, stdout 1, stderr 2, and on 3 a `Status` object (Success, or Failure with the
  exit code in `details.causes[reason=ExitCode]`).

Where this differs from the kubelet: the kubelet dials the pod IP from the node; a port-forward
lands on `localhost` inside the pod's network namespace, so a server bound to the pod IP only
is reachable by the kubelet and not this way, and one bound to 127.0.0.1 the other way round.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from probetui.probe.base import MAX_OUTPUT_BYTES
from probetui.probe.exec import ExecOutput

log = logging.getLogger(__name__)

STDOUT, STDERR, STATUS = 1, 2, 3
# a forward that nobody connects to is closed after this long (the probe's dial never came)
_ACCEPT_WINDOW = 10.0

# opens the websocket for one pod subresource: the caller binds the API object and the pod
WsOpener = Callable[[], Awaitable[aiohttp.ClientWebSocketResponse]]


class StreamError(Exception):
    """The API server refused or broke the stream; the message is for the attempt's output."""


def _frame(channel: int, data: bytes) -> bytes:
    return bytes((channel,)) + data


async def _open(opener: WsOpener) -> aiohttp.ClientWebSocketResponse:
    try:
        return await opener()
    except aiohttp.WSServerHandshakeError as e:
        if e.status == 403:
            raise StreamError(f"forbidden: {e.message or 'the API server refused'}") from None
        raise StreamError(f"websocket handshake failed: {e.status} {e.message}") from None


class PortForward:
    """One port-forward stream for one TCP connection (the kubelet opens one per probe too)."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._seen_port: set[int] = set()
        self.error = ""

    @classmethod
    async def open(cls, opener: WsOpener) -> PortForward:
        return cls(await _open(opener))

    async def send(self, data: bytes) -> None:
        await self.ws.send_bytes(_frame(0, data))

    async def recv(self) -> bytes | None:
        """The next data bytes from the pod, None at the end of the stream."""
        while True:
            msg = await self.ws.receive()
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                return None
            if msg.type is aiohttp.WSMsgType.ERROR:
                raise StreamError(f"port-forward stream broke: {self.ws.exception()}")
            if msg.type is not aiohttp.WSMsgType.BINARY or not msg.data:
                continue
            channel, payload = msg.data[0], msg.data[1:]
            if channel not in self._seen_port:
                # the first frame on each channel is the port, not data
                self._seen_port.add(channel)
                payload = payload[2:]
                if not payload:
                    continue
            if channel == 1:
                self.error += payload.decode("utf-8", "replace")
                continue
            if payload:
                return bytes(payload)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()


async def _pipe_local_to_pod(reader: asyncio.StreamReader, pf: PortForward) -> None:
    while data := await reader.read(65536):
        await pf.send(data)


async def _pipe_pod_to_local(pf: PortForward, writer: asyncio.StreamWriter) -> None:
    while (data := await pf.recv()) is not None:
        writer.write(data)
        await writer.drain()


class OneShotForward:
    """A loopback listener that carries exactly one connection to the pod, then closes.

    `reach()` returns its address; the handler dials it as it would dial the pod.
    """

    def __init__(self, opener: WsOpener, timeout: float) -> None:
        self.opener = opener
        self.timeout = timeout
        self.server: asyncio.Server | None = None
        self.port = 0
        self._task: asyncio.Task[None] | None = None
        self.error = ""

    async def start(self) -> tuple[str, int]:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        loop.call_later(max(self.timeout, 1.0) + _ACCEPT_WINDOW, self._close_server)
        return "127.0.0.1", self.port

    def _close_server(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._close_server()  # one connection only
        pf: PortForward | None = None
        try:
            pf = await asyncio.wait_for(PortForward.open(self.opener), self.timeout + 5)
            up = asyncio.ensure_future(_pipe_local_to_pod(reader, pf))
            down = asyncio.ensure_future(_pipe_pod_to_local(pf, writer))
            done, _pending = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if down in done:
                up.cancel()
            else:
                # the prober half-closed (e.g. after its request): keep reading the answer
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(down, self.timeout + 5)
            for task in (up, down):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            self.error = pf.error
        except (TimeoutError, StreamError, aiohttp.ClientError, OSError) as e:
            self.error = str(e) or type(e).__name__
            log.info("port-forward failed: %s", self.error)
        finally:
            if pf is not None:
                await pf.close()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def exec_in_pod(opener: WsOpener, timeout: float) -> ExecOutput:
    """Run a command through `pods/exec`, as CRI ExecSync would: output, exit code, timeout."""
    kept = bytearray()
    status: dict[str, Any] | None = None

    async def read_all(ws: aiohttp.ClientWebSocketResponse) -> None:
        nonlocal status
        async for msg in ws:
            if msg.type is not aiohttp.WSMsgType.BINARY or not msg.data:
                continue
            channel, payload = msg.data[0], msg.data[1:]
            if channel in (STDOUT, STDERR):
                room = MAX_OUTPUT_BYTES - len(kept)
                if room > 0:
                    kept.extend(payload[:room])
            elif channel == STATUS and payload:
                with contextlib.suppress(ValueError):
                    status = json.loads(payload)

    try:
        ws = await asyncio.wait_for(_open(opener), timeout)
    except TimeoutError:
        return ExecOutput(bytes(kept), None, timed_out=True)
    except (StreamError, aiohttp.ClientError, OSError) as e:
        return ExecOutput(b"", None, error=str(e) or type(e).__name__)
    try:
        await asyncio.wait_for(read_all(ws), timeout)
    except TimeoutError:
        return ExecOutput(bytes(kept), None, timed_out=True)
    finally:
        with contextlib.suppress(Exception):
            await ws.close()
    return ExecOutput(bytes(kept), *_exit_code(status))


def _exit_code(status: dict[str, Any] | None) -> tuple[int | None, bool, str | None]:
    if status is None:
        return None, False, "exec stream ended without a status"
    if status.get("status") == "Success":
        return 0, False, None
    for cause in (status.get("details") or {}).get("causes") or ():
        if cause.get("reason") == "ExitCode":
            with contextlib.suppress(ValueError, TypeError):
                return int(cause.get("message")), False, None
    return None, False, status.get("message") or "exec failed"


__all__ = ["OneShotForward", "PortForward", "StreamError", "WsOpener", "exec_in_pod"]
