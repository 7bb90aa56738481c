"""Real servers on 127.0.0.1 for the TCP and gRPC handler tests, each on a port the OS chose."""

from __future__ import annotations

import os

# Quiet gRPC core (the TLS test server logs failed handshakes) before anything imports grpc.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")

import asyncio
import datetime
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import grpc
import pytest
import trustme
from aiohttp import web
from grpc_health.v1 import health_pb2, health_pb2_grpc

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


@pytest.fixture
def closed_port() -> int:
    """A port that was just bound and released: nothing listens there."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class TCPListener:
    port: int
    # bytes each accepted connection sent before it ended, and how it ended ("fin" or "rst")
    received: list[bytes] = field(default_factory=list)
    endings: list[str] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)


@pytest.fixture
async def tcp_listener() -> AsyncIterator[TCPListener]:
    """Accepts connections and records what the client sent and whether it closed with a FIN."""
    listener = TCPListener(port=0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = b""
        try:
            data = await asyncio.wait_for(reader.read(), timeout=2.0)
            listener.endings.append("fin")
        except ConnectionResetError:
            listener.endings.append("rst")
        except TimeoutError:
            listener.endings.append("open")
        finally:
            listener.received.append(data)
            writer.close()
            listener.closed.set()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    listener.port = server.sockets[0].getsockname()[1]
    try:
        yield listener
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
def stalled_port() -> Iterator[int]:
    """A listener whose accept queue is full, so a new connect gets no answer and times out."""
    server = socket.socket()
    filler = socket.socket()
    try:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        filler.settimeout(1.0)
        filler.connect(("127.0.0.1", port))
        yield port
    finally:
        filler.close()
        server.close()


class RecordingHealthServicer(health_pb2_grpc.HealthServicer):
    """grpc.health.v1.Health with a status per service, an optional delay, and a record of
    each call's user-agent and peer (one peer per TCP connection)."""

    def __init__(self, statuses: dict[str, int], delay: float) -> None:
        self.statuses = statuses
        self.delay = delay
        self.user_agents: list[str] = []
        self.peers: list[str] = []

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        metadata = dict(context.invocation_metadata() or ())
        self.user_agents.append(str(metadata.get("user-agent", "")))
        self.peers.append(context.peer())
        if self.delay:
            await asyncio.sleep(self.delay)
        if request.service not in self.statuses:
            # what grpc-go's and grpcio's own health servers answer
            await context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return health_pb2.HealthCheckResponse(status=self.statuses[request.service])


@dataclass(frozen=True)
class ServerCert:
    key_pem: bytes
    chain_pem: bytes


@dataclass(frozen=True)
class GRPCServer:
    port: int
    servicer: RecordingHealthServicer | None


StartGRPC = Callable[..., Awaitable[GRPCServer]]


def _issue(*identities: str, expired: bool = False) -> ServerCert:
    ca = trustme.CA()
    kwargs = {}
    if expired:
        now = datetime.datetime.now(datetime.UTC)
        kwargs = {
            "not_before": now - datetime.timedelta(days=30),
            "not_after": now - datetime.timedelta(days=1),
        }
    cert = ca.issue_cert(*identities, **kwargs)
    chain = b"".join(blob.bytes() for blob in cert.cert_chain_pems)
    return ServerCert(key_pem=cert.private_key_pem.bytes(), chain_pem=chain)


@pytest.fixture(scope="session")
def server_cert() -> ServerCert:
    """A certificate for 127.0.0.1 from a throwaway CA the probe does not know."""
    return _issue("127.0.0.1")


@pytest.fixture(scope="session")
def odd_server_cert() -> ServerCert:
    """Expired and for another name: InsecureSkipVerify must accept it all the same."""
    return _issue("probe-target.invalid", expired=True)


@pytest.fixture
async def grpc_server() -> AsyncIterator[StartGRPC]:
    """Start grpc.aio servers on 127.0.0.1: `await grpc_server(statuses=..., delay=...,
    cert=..., health=True)`. All are stopped at teardown."""
    servers: list[grpc.aio.Server] = []

    async def start(
        *,
        statuses: dict[str, int] | None = None,
        delay: float = 0.0,
        cert: ServerCert | None = None,
        health: bool = True,
    ) -> GRPCServer:
        server = grpc.aio.server()
        servers.append(server)
        servicer = None
        if health:
            servicer = RecordingHealthServicer(
                statuses if statuses is not None else {"": SERVING}, delay
            )
            health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
        if cert is None:
            port = server.add_insecure_port("127.0.0.1:0")
        else:
            creds = grpc.ssl_server_credentials([(cert.key_pem, cert.chain_pem)])
            port = server.add_secure_port("127.0.0.1:0", creds)
        await server.start()
        return GRPCServer(port=port, servicer=servicer)

    try:
        yield start
    finally:
        for server in servers:
            await server.stop(None)


@pytest.fixture
async def http_server() -> AsyncIterator[int]:
    """A plain HTTP/1.1 server (aiohttp) that is not gRPC, like upstream's httptest server."""
    app = web.Application()

    async def hello(_request: web.Request) -> web.Response:
        return web.Response(text="res")

    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()
