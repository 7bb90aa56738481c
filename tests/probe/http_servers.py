"""Loopback HTTP/1.1 servers for the HTTP probe tests.

Written on asyncio streams rather than a framework so each test controls every byte the probe
gets back (aborts, malformed status lines, stalls, endless bodies) and sees every header line
the probe sent, in order and with its spelling.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import trustme

_HEAD_TIMEOUT = 5.0


@dataclass(frozen=True)
class SeenRequest:
    """One request head as it arrived."""

    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]  # in wire order, names as spelled

    def get_all(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def get(self, name: str) -> str | None:
        values = self.get_all(name)
        return values[0] if values else None

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]


# Given the request and the connection's writer; the server closes the connection afterwards.
Handler = Callable[[SeenRequest, asyncio.StreamWriter], Awaitable[None]]
# Given the raw streams, for servers that do not speak HTTP.
RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def response(
    status: int,
    body: bytes | str = b"",
    headers: Sequence[tuple[str, str]] = (),
    *,
    reason: str = "Status",
    content_length: bool = True,
) -> bytes:
    payload = body.encode() if isinstance(body, str) else body
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{k}: {v}" for k, v in headers]
    if content_length:
        lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


async def send(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(data)
    await writer.drain()


def _parse_head(head: bytes) -> SeenRequest:
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ", 2)
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name, value.strip(" \t")))
    return SeenRequest(method, target, version, tuple(headers))


@dataclass
class LoopbackServer:
    """A server on 127.0.0.1 with a port the OS chose; counts TCP connections and keeps every
    request head it read."""

    handler: Handler | None = None
    raw_handler: RawHandler | None = None
    ssl_context: ssl.SSLContext | None = None
    port: int = 0
    connections: int = 0
    requests: list[SeenRequest] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_context else "http"

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._connection, "127.0.0.1", 0, ssl=self.ssl_context, backlog=512
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        # handlers end on cancellation; their errors are the test's business, not teardown's
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            if self.raw_handler is not None:
                await self.raw_handler(reader, writer)
                return
            async with asyncio.timeout(_HEAD_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            request = _parse_head(head)
            self.requests.append(request)
            assert self.handler is not None
            await self.handler(request, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, TimeoutError):
            pass  # the probe hung up or never finished its request: nothing to answer
        finally:
            self._tasks.discard(task)
            with contextlib.suppress(ConnectionError, ssl.SSLError):
                writer.close()


@contextlib.asynccontextmanager
async def serve(
    handler: Handler | None = None,
    *,
    raw_handler: RawHandler | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[LoopbackServer]:
    server = LoopbackServer(handler=handler, raw_handler=raw_handler, ssl_context=ssl_context)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def ca_signed_context(ca: trustme.CA) -> ssl.SSLContext:
    """A server context with a leaf for 127.0.0.1/localhost from a CA the probe does not know."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(ctx)
    return ctx


def self_signed_context(ca: trustme.CA) -> ssl.SSLContext:
    """A server context presenting the CA's own self-signed certificate."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with ca.cert_pem.tempfile() as cert, ca.private_key_pem.tempfile() as key:
        ctx.load_cert_chain(cert, key)
    return ctx
