"""Reach a pod through the API server: port-forward and exec over `v4.channel.k8s.io` websockets.

kubernetes-asyncio 36 has exec (`WsApiClient`) but no port-forward helper, so both are here,
small and over the same websocket, opened through the library's `CoreV1Api.connect_get_*` calls
so that authentication and the read-only guard apply exactly as for every other request.

Channel protocol (v4): every binary message starts with one byte naming the channel.
- portforward, port i of the `ports` list: data on channel 2i, errors on channel 2i+1. The
  server's first message on each channel carries the port number, 2 bytes little-endian, and
  no data. The server dials the port as soon as the stream opens and reports a failure as text
  on the error channel; a success sends nothing.
- exec: stdin 0, stdout 1, stderr 2, and on 3 a `Status` object (Success, or Failure with the
  exit code in `details.causes[reason=ExitCode]`).

A probe handler dials an address, so a port-forward is offered as a one-shot loopback listener
(`OneShotForward`). The stream is opened before the listener, and a refusal that the server
reports at once (nothing listens on the port in the pod) turns into a refused address: a TCP
probe then fails as the kubelet's dial would, instead of "connecting" to the local listener.

RBAC: a websocket upgrade is a GET, so the API server authorizes exec and port-forward as `get`
on `pods/exec` and `pods/portforward` (`RequestInfoFactory`: the verb comes from the method).
From Kubernetes 1.35 the pod registry checks `create` on the subresource as well
(`pkg/registry/core/pod/rest/subresources.go`, feature gate
AuthorizePodWebsocketUpgradeCreatePermission, beta and on by default from 1.35). A 403 says what
the server's version needs (`rbac_needs`); the runtime learns the version from `/version`.

Where this differs from the kubelet: the kubelet dials the pod IP from the node; a port-forward
lands on `localhost` inside the pod's network namespace, so a server bound to the pod IP only
is reachable by the kubelet and not this way, and one bound to 127.0.0.1 the other way round.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from probetui.probe.base import MAX_OUTPUT_BYTES
from probetui.probe.exec import ExecOutput
from probetui.probe.util import ReachError

log = logging.getLogger(__name__)

STDOUT, STDERR, STATUS = 1, 2, 3
DATA, ERROR = 0, 1  # the one forwarded port's channels
# the listener closes this long after the probe's timeout: the attempt is over by then
_ACCEPT_WINDOW = 1.0
# connections one attempt may make: the first, and the kubelet's 10 same-host redirects (each
# a new connection: its probe client keeps no connection alive)
MAX_CONNECTIONS = 11
# how long to wait for the server's "nothing listens there", at least, and in handshakes
MIN_ERROR_WINDOW = 0.05
ERROR_WINDOW_HANDSHAKES = 2.0
_MAX_ERROR_TEXT = 4096
# what opening a stream may take beyond the probe's own timeout
OPEN_MARGIN = 5.0
_READ_CHUNK = 64 * 1024

# opens the websocket for one pod subresource: the caller binds the API object and the pod.
# kubernetes-asyncio's `_preload_content=False` hands back an awaitable that connects.
WsOpener = Callable[[], Awaitable[Any]]
# what RBAC must grant for a subresource ("pods/exec"), as the server's version has it
RbacNeeds = Callable[[str], Awaitable[str]]
# the first version whose registry also checks `create` (AuthorizePodWebsocketUpgradeCreatePermission)
CREATE_CHECK_SINCE = (1, 35)


def rbac_needs(what: str, version: tuple[int, int] | None) -> str:
    """Tell what a role must grant on `what` for a websocket exec or port-forward to `version`."""
    if version is None:
        return (
            f"get on {what}, and from Kubernetes 1.35 create too (the server's version is not "
            "known)"
        )
    shown = f"{version[0]}.{version[1]}"
    if version >= CREATE_CHECK_SINCE:
        return (
            f"get and create on {what}: Kubernetes {shown} also checks create "
            "(feature gate AuthorizePodWebsocketUpgradeCreatePermission, on by default)"
        )
    return f"get on {what}: Kubernetes {shown} authorizes the websocket upgrade as get"


async def _unknown_version(what: str) -> str:
    return rbac_needs(what, None)


class StreamError(Exception):
    """Signals that the API server refused or broke the stream; the message is for the attempt's
    output."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiPathError(ReachError):
    """Signals that the path to the pod could not be opened (forbidden, API server
    unreachable, ...).

    The handler runner turns it into an (Unknown, error) attempt: retried, then discarded, never
    counted as the container's failure, and its text is shown.
    """


def _frame(channel: int, data: bytes) -> bytes:
    return bytes((channel,)) + data


async def _open(
    opener: WsOpener, what: str, needs: RbacNeeds = _unknown_version
) -> aiohttp.ClientWebSocketResponse:
    try:
        ws = await opener()
        if inspect.isawaitable(ws):
            ws = await ws
    except aiohttp.WSServerHandshakeError as e:
        if e.status == 403:
            raise StreamError(
                f"forbidden: the API server refused {what} for this user (RBAC needs "
                f"{await needs(what)})",
                403,
            ) from None
        if e.status == 401:
            raise StreamError(
                f"unauthorized: the API server refused the credentials ({what})", 401
            ) from None
        raise StreamError(
            f"{what}: the API server answered {e.status} {e.message}", e.status
        ) from None
    except aiohttp.ClientError as e:
        raise StreamError(f"{what}: {type(e).__name__}: {e}") from None
    assert isinstance(ws, aiohttp.ClientWebSocketResponse)
    return ws


class PortForward:
    """Runs one port-forward stream for one TCP connection (the kubelet opens one per probe too).

    A reader task takes every message off the websocket as it arrives: data into a queue,
    error text into `error`.
    """

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.error = ""
        self.errored = asyncio.Event()
        self._data: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._seen_port: set[int] = set()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, opener: WsOpener, needs: RbacNeeds = _unknown_version) -> PortForward:
        return cls(await _open(opener, "pods/portforward", needs))

    async def _read(self) -> None:
        try:
            async for msg in self.ws:
                if msg.type is not aiohttp.WSMsgType.BINARY or not msg.data:
                    continue
                channel, payload = msg.data[0], msg.data[1:]
                if channel not in self._seen_port:
                    # the first frame on each channel is the port, not data
                    self._seen_port.add(channel)
                    payload = payload[2:]
                if not payload:
                    continue
                if channel == ERROR:
                    if len(self.error) < _MAX_ERROR_TEXT:
                        self.error += payload.decode("utf-8", "replace")
                    self.errored.set()
                elif channel == DATA:
                    self._data.put_nowait(bytes(payload))
        except (aiohttp.ClientError, OSError) as e:
            if not self.error:
                self.error = f"port-forward stream broke: {e}"
        finally:
            self._data.put_nowait(None)

    async def wait_error(self, window: float) -> bool:
        """True if the server reported an error within `window` seconds (or before)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.errored.wait(), window)
        return self.errored.is_set()

    async def send(self, data: bytes) -> None:
        await self.ws.send_bytes(_frame(DATA, data))

    async def recv(self) -> bytes | None:
        """Return the next data bytes from the pod, None at the end of the stream."""
        return await self._data.get()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(BaseException):
            await self._reader


async def _pipe_local_to_pod(reader: asyncio.StreamReader, pf: PortForward) -> None:
    while data := await reader.read(_READ_CHUNK):
        await pf.send(data)


async def _pipe_pod_to_local(
    pf: PortForward, writer: asyncio.StreamWriter, forward: OneShotForward
) -> None:
    last = time.monotonic()
    while (data := await pf.recv()) is not None:
        last = time.monotonic()
        writer.write(data)
        await writer.drain()
    # the pod's side ended: what passed since its last byte is the forwarder's linger
    forward.lingered += time.monotonic() - last


Relay = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def quiet_on_cancel(relay: Relay) -> Relay:
    """Return a connection handler for `asyncio.start_server` that ends quietly when cancelled (the
    engine stopping): on 3.11 the streams callback asks a cancelled handler task for its
    exception, and logs the CancelledError it gets with a traceback."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await relay(reader, writer)

    return serve


def _refused_address() -> tuple[socket.socket, tuple[str, int]]:
    """Return a loopback port that refuses connections: bound, never listening, held until
    closed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock, sock.getsockname()


class OneShotForward:
    """Runs a loopback listener for one probe attempt; each connection is its own
    port-forward stream.

    `start()` opens the first stream, then the listener; it returns the address the handler
    dials as it would dial the pod. A redirect the handler follows is a new connection and gets
    a new stream. The listener closes `timeout` + a second after `start()`; `done` is set when
    a connection has ended, or when the listener closed unused.
    """

    def __init__(
        self, opener: WsOpener, timeout: float, *, needs: RbacNeeds = _unknown_version
    ) -> None:
        self.opener = opener
        self.timeout = timeout
        self.needs = needs
        self.server: asyncio.Server | None = None
        self.port = 0
        self.error = ""
        self.done = asyncio.Event()
        self._pf: PortForward | None = None
        self._refuser: socket.socket | None = None
        self._closing: asyncio.Future[None] | None = None
        self.connections = 0
        # seconds the end of file of the pod's side came after its last byte, over every
        # connection: containerd's linger (`KubernetesRuntime.close_linger`)
        self.lingered = 0.0

    async def start(self) -> tuple[str, int]:
        """Raises `StreamError` when the stream cannot be opened (forbidden, unreachable)."""
        began = time.monotonic()
        try:
            pf = await asyncio.wait_for(
                PortForward.open(self.opener, self.needs), self.timeout + OPEN_MARGIN
            )
        except TimeoutError:
            raise StreamError("pods/portforward: the API server did not answer in time") from None
        self._pf = pf
        handshake = time.monotonic() - began
        window = min(self.timeout, max(MIN_ERROR_WINDOW, ERROR_WINDOW_HANDSHAKES * handshake))
        try:
            refused = await pf.wait_error(window)
            if refused:
                # the server could not dial the port in the pod: the probe's dial fails too
                self.error = pf.error.strip()
                log.info("port-forward: %s", self.error)
                await pf.close()
                self._refuser, address = _refused_address()
            else:
                self.server = await asyncio.start_server(
                    quiet_on_cancel(self._relay), "127.0.0.1", 0
                )
                self.port = self.server.sockets[0].getsockname()[1]
                address = ("127.0.0.1", self.port)
        except BaseException:
            await pf.close()
            raise
        loop = asyncio.get_running_loop()
        loop.call_later(self.timeout + _ACCEPT_WINDOW, self._expire)
        return address

    def _expire(self) -> None:
        self._close_server()
        if self._refuser is not None:
            self._refuser.close()
            self._refuser = None
        pf, self._pf = self._pf, None
        if pf is not None:
            # nobody came for the first stream: close it
            self._closing = asyncio.ensure_future(pf.close())
            self.done.set()

    def _close_server(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        if self.connections >= MAX_CONNECTIONS:
            self._close_server()
        pf, self._pf = self._pf, None
        try:
            if pf is None:
                pf = await asyncio.wait_for(
                    PortForward.open(self.opener, self.needs), self.timeout + OPEN_MARGIN
                )
            up = asyncio.ensure_future(_pipe_local_to_pod(reader, pf))
            down = asyncio.ensure_future(_pipe_pod_to_local(pf, writer, self))
            # either side's end is the connection's end: the handlers never half-close, so an
            # end of file from the prober means it is done with the answer
            await asyncio.wait(
                {up, down}, timeout=self.timeout + OPEN_MARGIN, return_when=asyncio.FIRST_COMPLETED
            )
            for task in (up, down):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            self.error = pf.error.strip()
            if self.error:
                log.info("port-forward: %s", self.error)
        except (StreamError, TimeoutError, aiohttp.ClientError, OSError) as e:
            self.error = str(e) or type(e).__name__
            log.info("port-forward failed: %s", self.error)
        finally:
            if pf is not None:
                await pf.close()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self.done.set()


async def exec_in_pod(
    opener: WsOpener, timeout: float, *, needs: RbacNeeds = _unknown_version
) -> ExecOutput:
    """Run a command through `pods/exec`, as CRI ExecSync would: output, exit code, timeout.

    stdout and stderr are kept together, up to the kubelet's 10 KiB; the exit code comes from
    the Status on channel 3. Every failure to open or finish comes back as `error` (the probe's
    Unknown), a forbidden stream with a line saying so.
    """
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
        # the handshake is the API server's time, not the command's: it has its own limit
        ws = await asyncio.wait_for(_open(opener, "pods/exec", needs), timeout + OPEN_MARGIN)
    except TimeoutError:
        return ExecOutput(b"", None, error="pods/exec: the API server did not answer in time")
    except (StreamError, OSError) as e:
        return ExecOutput(b"", None, error=str(e) or type(e).__name__)
    try:
        await asyncio.wait_for(read_all(ws), timeout)
    except TimeoutError:
        return ExecOutput(bytes(kept), None, timed_out=True)
    except (aiohttp.ClientError, OSError) as e:
        return ExecOutput(bytes(kept), None, error=f"exec stream broke: {e}")
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


__all__ = [
    "CREATE_CHECK_SINCE",
    "ApiPathError",
    "OneShotForward",
    "PortForward",
    "RbacNeeds",
    "StreamError",
    "WsOpener",
    "exec_in_pod",
    "rbac_needs",
]
