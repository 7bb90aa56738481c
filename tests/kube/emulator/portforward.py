"""pods/portforward over a websocket, forwarding to real loopback servers.

For the i-th requested port the data channel is 2i and the error channel 2i+1. Before anything
else the server writes the port, as 2 bytes little-endian, on both channels of each pair
(handleWebSocketStreams). Each port is then dialled at once, as the kubelet's forwarder does; a
failure is written as text on that port's error channel. When every port's connection has
ended the websocket is closed (`linger` seconds after the target closed, as containerd's
`portForward` waits); when the client closes it, every connection to a target is.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Callable

from aiohttp import WSMsgType, web

from .channels import ChannelSocket

PROTOCOLS = ("v4.channel.k8s.io", "v4.base64.channel.k8s.io")

# (pod port) -> where the emulator dials it, or None when nothing listens there
Resolve = Callable[[int], tuple[str, int] | None]


def parse_ports(values: list[str]) -> list[int]:
    """The `ports` (apiserver) / `port` (kubelet) query values: repeated and/or comma-separated."""
    if not values:
        raise ValueError('query parameter "port" is required')
    ports: list[int] = []
    for value in values:
        if value == "":
            raise ValueError('query parameter "port" cannot be empty')
        for part in value.split(","):
            if not part.isdigit() or int(part) > 65535:
                raise ValueError(f'unable to parse "{value}" as a port')
            if int(part) < 1:
                raise ValueError(f'port "{value}" must be > 0')
            ports.append(int(part))
    return ports


def refused_text(port: int, sandbox: str, netns: str) -> str:
    # containerd's error for a port nothing listens on, wrapped by the kubelet's handler.
    return (
        f"error forwarding port {port} to pod {sandbox}, uid : failed to execute portforward "
        f'in network namespace "{netns}": failed to connect to localhost:{port} inside '
        f'namespace "{sandbox}", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection '
        f"refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused "
    )


class _Pair:
    def __init__(self, index: int, port: int) -> None:
        self.index = index
        self.port = port
        self.writer: asyncio.StreamWriter | None = None
        self.task: asyncio.Task[None] | None = None

    @property
    def data(self) -> int:
        return 2 * self.index

    @property
    def error(self) -> int:
        return 2 * self.index + 1


async def serve_portforward(
    request: web.Request,
    protocol: str,
    ports: list[int],
    resolve: Resolve,
    *,
    sandbox: str,
    connect_timeout: float = 2.0,
    linger: float = 0.0,
) -> web.WebSocketResponse:
    sock = await ChannelSocket.accept(request, protocol)
    pairs = [_Pair(i, port) for i, port in enumerate(ports)]
    for pair in pairs:
        prefix = struct.pack("<H", pair.port)
        await sock.send(pair.data, prefix)
        await sock.send(pair.error, prefix)

    netns = f"/var/run/netns/cni-{sandbox[:8]}-{sandbox[8:12]}-{sandbox[12:16]}"

    async def dial(pair: _Pair) -> asyncio.StreamReader | None:
        target = resolve(pair.port)
        try:
            if target is None:
                raise ConnectionRefusedError
            reader, pair.writer = await asyncio.wait_for(
                asyncio.open_connection(*target), timeout=connect_timeout
            )
        except (OSError, TimeoutError):
            await sock.send(pair.error, refused_text(pair.port, sandbox, netns).encode())
            return None
        return reader

    async def forward(pair: _Pair, reader: asyncio.StreamReader | None) -> None:
        if reader is None:
            return
        while chunk := await reader.read(64 * 1024):
            await sock.send(pair.data, chunk)
        # containerd's CRI portForward: after one direction ends it waits up to a second for
        # the other before it closes the stream, so the client sees the pod's close that late
        await asyncio.sleep(linger)

    # every port is dialled before the client's first bytes are read, so none are dropped
    readers = await asyncio.gather(*(dial(pair) for pair in pairs))
    for pair, target_reader in zip(pairs, readers, strict=True):
        pair.task = asyncio.create_task(forward(pair, target_reader))

    async def read_client() -> None:
        by_channel = {p.data: p for p in pairs}
        async for msg in sock.ws:
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.ERROR):
                break
            decoded = sock.decode(msg)
            if decoded is None:
                continue
            channel, data = decoded
            pair = by_channel.get(channel)
            if pair is None or pair.writer is None or pair.writer.is_closing() or not data:
                continue
            with contextlib.suppress(ConnectionError):
                pair.writer.write(data)
                await pair.writer.drain()

    reader = asyncio.create_task(read_client())
    forwards = asyncio.gather(*(p.task for p in pairs if p.task), return_exceptions=True)
    try:
        await asyncio.wait({reader, forwards}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        forwards.cancel()
        reader.cancel()
        for pair in pairs:
            if pair.writer is not None:
                pair.writer.close()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await forwards
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await reader
        await sock.close()
    return sock.ws
