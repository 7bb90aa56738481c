"""The websocket channel protocol of k8s.io/apiserver/pkg/util/wsstream.

Each message carries one channel: in the binary protocols (`channel.k8s.io`,
`v4.channel.k8s.io`, `v5.channel.k8s.io`) the first byte is the channel number; in the base64
ones (`*.base64.channel.k8s.io`) the message is text, its first character is the channel as an
ASCII digit and the rest is base64. v5 adds a CLOSE signal: channel 255 carrying the number of
the channel the peer has finished writing to.
"""

from __future__ import annotations

import base64
import contextlib

from aiohttp import WSMsgType, web

from . import status

CLOSE_CHANNEL = 255


class ProtocolRefused(Exception):
    """The client offered subprotocols and none is served here."""


def negotiate(request: web.Request, supported: tuple[str, ...]) -> str:
    """The first protocol the client offers that is served ("" when it offers none), as wsstream."""
    header = request.headers.get("Sec-WebSocket-Protocol", "")
    offered = [p.strip() for p in header.split(",") if p.strip()]
    if not offered:
        return ""
    for proto in offered:
        if proto in supported:
            return proto
    raise ProtocolRefused(
        f"requested protocol(s) are not supported: {offered}; supports {list(supported)}"
    )


def upgrade_required() -> web.Response:
    return status.response(status.bad_request("Upgrade request required"))


class ChannelSocket:
    """One accepted websocket speaking a channel protocol."""

    def __init__(self, ws: web.WebSocketResponse, protocol: str) -> None:
        self.ws = ws
        self.protocol = protocol
        self.base64 = ".base64." in f".{protocol}"

    @classmethod
    async def accept(cls, request: web.Request, protocol: str) -> ChannelSocket:
        # Go's websocket servers do not negotiate permessage-deflate; neither does this one.
        ws = web.WebSocketResponse(
            protocols=(protocol,) if protocol else (), compress=False, autoping=True
        )
        await ws.prepare(request)
        return cls(ws, protocol)

    async def send(self, channel: int, data: bytes) -> None:
        if self.ws.closed:
            return
        # the client may close between the check and the send (a probe ends, a run is
        # cancelled); the real API server drops such frames too
        with contextlib.suppress(ConnectionError):
            if self.base64:
                await self.ws.send_str(str(channel) + base64.b64encode(data).decode())
            else:
                await self.ws.send_bytes(bytes([channel]) + data)

    def decode(self, msg: web.WSMessage) -> tuple[int, bytes] | None:
        """(channel, payload) of a data message; None for control frames and empty messages."""
        if msg.type == WSMsgType.BINARY:
            raw: bytes = msg.data
            if not raw:
                return None
            if self.base64:
                return int(chr(raw[0])), base64.b64decode(raw[1:])
            return raw[0], raw[1:]
        if msg.type == WSMsgType.TEXT:
            text: str = msg.data
            if not text:
                return None
            if self.base64:
                return int(text[0]), base64.b64decode(text[1:])
            raw = text.encode()
            return raw[0], raw[1:]
        return None

    async def close(self) -> None:
        if not self.ws.closed:
            await self.ws.close()
