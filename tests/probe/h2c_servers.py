"""Loopback h2c servers for the h2c probe tests: HTTP/2 over cleartext with prior knowledge.

`serve_h2c` is a real HTTP/2 server on the `h2` package (the python-hyper implementation,
independent of the handler's own framing): it reads the client preface, answers each request
with what the test's `respond` returns, and keeps every request's header fields as they came.
`serve_frames` writes the frames a test scripts, built with `hyperframe` and `hpack`, after the
client's request has arrived: the malformed and the unusual answers a real server library will
not send.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import hpack
from hyperframe.frame import (
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    RstStreamFrame,
    SettingsFrame,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_READ_TIMEOUT = 5.0

# (status, extra header fields, body) the server answers a request with
Answer = tuple[int, Sequence[tuple[str, str]], bytes]


@dataclass
class H2cServer:
    """A server on 127.0.0.1 with a port the OS chose; counts connections, keeps requests."""

    port: int = 0
    connections: int = 0
    requests: list[list[tuple[str, str]]] = field(default_factory=list)

    def url(self, path: str = "/", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def request(self, i: int = -1) -> dict[str, list[str]]:
        """The i-th request's fields by name, values in order."""
        out: dict[str, list[str]] = {}
        for name, value in self.requests[i]:
            out.setdefault(name, []).append(value)
        return out


@contextlib.asynccontextmanager
async def _listen(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], object], server: H2cServer
) -> AsyncIterator[H2cServer]:
    tasks: set[asyncio.Task[None]] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        server.connections += 1
        try:
            await handle(reader, writer)  # type: ignore[misc]
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client hung up: nothing more to say
        finally:
            tasks.discard(task)
            with contextlib.suppress(ConnectionError):
                writer.close()

    listener = await asyncio.start_server(connection, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await listener.wait_closed()


@contextlib.asynccontextmanager
async def serve_h2c(
    respond: Callable[[H2cServer, dict[str, list[str]]], Answer],
) -> AsyncIterator[H2cServer]:
    """An h2c server answering each request with `respond(server, fields)`."""
    server = H2cServer()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config)
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        while True:
            async with asyncio.timeout(_READ_TIMEOUT):
                data = await reader.read(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    fields = [(str(n), str(v)) for n, v in event.headers]
                    server.requests.append(fields)
                    status, headers, body = respond(server, server.request())
                    sid = event.stream_id
                    conn.send_headers(sid, [(":status", str(status)), *headers])
                    # within the client's frame size and window (4 MiB: ample here)
                    step = conn.max_outbound_frame_size
                    for i in range(0, len(body), step):
                        conn.send_data(sid, body[i : i + step])
                    conn.end_stream(sid)
            writer.write(conn.data_to_send())
            await writer.drain()

    async with _listen(handle, server) as s:
        yield s


def headers_frame(
    fields: Sequence[tuple[str, str]], *, end_stream: bool = True, stream_id: int = 1
) -> HeadersFrame:
    f = HeadersFrame(stream_id)
    f.data = hpack.Encoder().encode(list(fields))
    f.flags.add("END_HEADERS")
    if end_stream:
        f.flags.add("END_STREAM")
    return f


def data_frame(data: bytes, *, end_stream: bool = True, stream_id: int = 1) -> DataFrame:
    f = DataFrame(stream_id)
    f.data = data
    if end_stream:
        f.flags.add("END_STREAM")
    return f


def rst_frame(code: int) -> RstStreamFrame:
    f = RstStreamFrame(1)
    f.error_code = code
    return f


def goaway_frame(last_stream_id: int, code: int, debug: bytes = b"") -> GoAwayFrame:
    f = GoAwayFrame(0)
    f.last_stream_id = last_stream_id
    f.error_code = code
    f.additional_data = debug
    return f


def settings_frame() -> SettingsFrame:
    return SettingsFrame(0)


# What a scripted connection writes once the request has come: frames, raw bytes, or the
# number of seconds to wait; then the connection closes.
Script = Sequence[Frame | bytes | float]


@contextlib.asynccontextmanager
async def serve_frames(script: Callable[[int], Script]) -> AsyncIterator[H2cServer]:
    """A server writing `script(n)` on its n-th connection (from 1) after the client's preface
    and request have arrived, then closing it."""
    server = H2cServer()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(_READ_TIMEOUT):
            head = await reader.readexactly(len(PREFACE))
        assert head == PREFACE, head
        # the client's SETTINGS, WINDOW_UPDATE and HEADERS follow at once
        await asyncio.sleep(0.05)
        n = server.connections
        for item in script(n):
            if isinstance(item, float | int):
                await asyncio.sleep(item)
                continue
            writer.write(item if isinstance(item, bytes) else item.serialize())
            await writer.drain()

    async with _listen(handle, server) as s:
        yield s
