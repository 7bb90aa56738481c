"""pytest fixtures around the emulator; import them into a conftest.py to use them elsewhere:

from tests.kube.emulator.fixtures import api, core_v1, echo_server, http_target  # noqa: F401
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from .server import ApiEmulator


@pytest.fixture
async def api() -> AsyncIterator[ApiEmulator]:
    """A running emulator; the test fails if the emulator itself hit a bug."""
    async with ApiEmulator() as emulator:
        yield emulator
        assert not emulator.errors, emulator.errors[0]


@pytest.fixture
async def core_v1(api: ApiEmulator) -> AsyncIterator[CoreV1Api]:
    """kubernetes_asyncio's CoreV1Api bound to the emulator with its bearer token."""
    async with ApiClient(api.configuration()) as client:
        yield CoreV1Api(client)


@dataclass
class EchoServer:
    port: int
    connections: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def echo_server() -> AsyncIterator[EchoServer]:
    """A TCP server on 127.0.0.1 that sends back every byte it gets until the peer closes."""
    echo = EchoServer(0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        echo.connections += 1
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            echo.closed.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    echo.port = server.sockets[0].getsockname()[1]
    try:
        yield echo
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1.0)


@dataclass
class HttpTarget:
    port: int
    # (method, path_qs, headers) of each request the target received
    seen: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    # path -> Location: answered 302 instead
    redirects: dict[str, str] = field(default_factory=dict)


@pytest.fixture
async def http_target() -> AsyncIterator[HttpTarget]:
    """An HTTP server on 127.0.0.1 answering `target.status` with "ok <path>" to any path."""
    target = HttpTarget(0)

    async def handle(request: web.Request) -> web.Response:
        target.seen.append((request.method, request.path_qs, dict(request.headers)))
        if request.path in target.redirects:
            return web.Response(status=302, headers={"Location": target.redirects[request.path]})
        return web.Response(status=target.status, text=f"ok {request.path}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    target.port = runner.addresses[0][1]
    try:
        yield target
    finally:
        await runner.cleanup()
