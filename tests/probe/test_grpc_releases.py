"""The lean gRPC handler's outcome texts, kubelet release by kubelet release.

Each kubelet release vendors its own grpc-go (k8s.io/kubernetes go.mod: 1.33 grpc-go 1.68.1,
1.34 1.72.1, 1.35 1.72.2, 1.36 1.79.3, 1.37 1.82.1, 1.38 1.85.0) and 1.38 makes its client with
`grpc.NewClient` instead of a blocking dial (`pkg/probe/grpc/grpc.go`). Every text below is what
that release's own `grpcProber.Probe`, built against its grpc-go, said to the same server; a
text applies from the release it is keyed by up to the next key. The upstream code that makes
each difference is named over its case.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from probetui.probe import grpc_lean
from tests.probe.conftest import SERVING, ServerCert, StartGRPC
from tests.probe.test_grpc_lean import (
    OK_HEAD,
    PREFACE,
    SETTINGS,
    TRAILERS_OK,
    Answer,
    RawH2,
    answered,
    frame,
    headers,
    health,
)

RELEASES = ("1.33", "1.34", "1.35", "1.36", "1.37", "1.38")

# the texts of the common endings, as grpc.go words them
CONNECT_TIMEOUT = (
    'timeout: failed to connect service "{addr}" within 300ms: context deadline exceeded'
)
RPC_TIMEOUT = "timeout: health rpc did not complete within 300ms"
RPC_FAILED = "error: health rpc probe failed: rpc error: code = "
# 1.38's grpc.go: a Check that fails Unavailable is a failure to connect
UNAVAILABLE_138 = 'error: failed to connect service at "{addr}": '
NOT_IMPLEMENTED = (
    "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): "
)
NOT_GRPC_404 = (
    NOT_IMPLEMENTED + "unexpected HTTP status code received from server: 404 (Not Found); "
    'transport: received unexpected content-type "text/html"'
)
REFUSED = "stream terminated by RST_STREAM with error code: REFUSED_STREAM"


@dataclass
class Servers:
    """What a case's server needs, and what it tells the test: `local`, the client's end of
    the last connection it accepted (`host:port`)."""

    grpc_server: StartGRPC
    server_cert: ServerCert
    tmp_path: Path
    started: list[asyncio.Server] = field(default_factory=list)
    local: str = ""

    async def raw(self, answer: Answer, **kwargs: object) -> int:
        server = RawH2(answer, **kwargs)  # type: ignore[arg-type]
        port = await server.start()
        assert server.server is not None
        self.started.append(server.server)
        return port

    async def handler(
        self,
        serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        tls: ssl.SSLContext | None = None,
    ) -> int:
        async def recorded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            host, port = writer.get_extra_info("peername")[:2]
            self.local = f"{host}:{port}"
            try:
                await serve(reader, writer)
            except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(recorded, "127.0.0.1", 0, ssl=tls)
        self.started.append(server)
        return int(server.sockets[0].getsockname()[1])

    def tls(self, *, alpn: bool) -> ssl.SSLContext:
        (self.tmp_path / "cert.pem").write_bytes(self.server_cert.chain_pem)
        (self.tmp_path / "key.pem").write_bytes(self.server_cert.key_pem)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tmp_path / "cert.pem", self.tmp_path / "key.pem")
        if alpn:
            context.set_alpn_protocols(["h2"])
        return context


@pytest.fixture
async def servers(
    grpc_server: StartGRPC, server_cert: ServerCert, tmp_path: Path
) -> AsyncIterator[Servers]:
    held = Servers(grpc_server, server_cert, tmp_path)
    yield held
    for server in held.started:
        server.close()


async def _frame_in(reader: asyncio.StreamReader) -> tuple[int, int, int]:
    head = await reader.readexactly(9)
    await reader.readexactly(int.from_bytes(head[:3], "big"))
    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF


async def _request_in(reader: asyncio.StreamReader) -> int:
    """The client preface and frames up to the end of a request: its stream ID."""
    while True:
        kind, flags, stream = await _frame_in(reader)
        if kind == 0x0 and flags & 0x1:
            return stream


def _on(stream: int, *frames: bytes) -> bytes:
    """`frames` (written for stream 1) moved to `stream`."""
    return b"".join(f[:5] + struct.pack(">I", stream) + f[9:] for f in frames)


def _scripted(script: Callable[[int, int, int], bytes | None]) -> Callable[..., Awaitable[None]]:
    """A server whose answer to each request is `script(connection, stream, request)`, counted
    from 0 (None: it hangs up)."""
    connections = [0]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index, connections[0] = connections[0], connections[0] + 1
        await reader.readexactly(len(PREFACE))
        writer.write(SETTINGS)
        ordinal = 0
        while True:
            stream = await _request_in(reader)
            out = script(index, stream, ordinal)
            ordinal += 1
            if out is None:
                return
            writer.write(out)
            await writer.drain()

    return serve


GOAWAY_0 = frame(0x7, 0, 0, struct.pack(">II", 0, 0))
RST_REFUSED = frame(0x3, 0, 1, struct.pack(">I", 0x7))
HEALTHY = (headers(OK_HEAD), health(SERVING), TRAILERS_OK)
NOT_FOUND_HTML = [(":status", "404"), ("content-type", "text/html")]


async def _first_frame(servers: Servers, first: bytes, *, hold: bool = True) -> int:
    """A server that answers the client preface with `first`, then holds the line (or hangs
    up)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(len(PREFACE))
        writer.write(first)
        await writer.drain()
        if hold:
            await reader.read()

    return await servers.handler(serve)


async def _reset_mid_call(servers: Servers, tls: ssl.SSLContext | None = None) -> int:
    """A server that takes the whole request, then resets the connection (SO_LINGER 0)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(len(PREFACE))
        writer.write(SETTINGS)
        await _request_in(reader)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    return await servers.handler(serve, tls)


async def _goaway_then_nothing_listening(servers: Servers) -> int:
    """A server that stops listening, then sends GOAWAY(last stream 0) on the request."""
    holder: list[asyncio.Server] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(len(PREFACE))
        writer.write(SETTINGS)
        await _request_in(reader)
        holder[0].close()
        writer.write(GOAWAY_0)
        await writer.drain()
        await reader.read()

    port = await servers.handler(serve)
    holder.append(servers.started[-1])
    return port


async def _closed(servers: Servers) -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _tls_to_plain(servers: Servers) -> int:
    return (await servers.grpc_server()).port


def _raw(*frames: bytes) -> Callable[[Servers], Awaitable[int]]:
    return lambda servers: servers.raw(answered(*frames))


@dataclass(frozen=True)
class Case:
    """One server, and what each release's probe says of it: the text of the release keyed,
    up to the next key; `{addr}` is the target, `{local}` the client's end."""

    server: Callable[[Servers], Awaitable[int]]
    texts: dict[str, str]
    tls: bool = False


CASES: dict[str, Case] = {
    # -- the connection -------------------------------------------------------------------------
    # 1.33-1.37 dial WithBlock until the deadline; 1.38's grpc.go makes a NewClient and its
    # fail-fast Check fails on the first connection that fails, with the transport's
    # ConnectionError (grpc-go 1.85 internal/transport/http2_client.go newHTTP2Client:
    # "transport: Error while dialing", readServerPreface's texts; x/net http2 Framer.ReadFrame's
    # ErrFrameTooLarge for an HTTP/1.1 answer)
    "connection refused": Case(
        _closed,
        {
            "1.33": CONNECT_TIMEOUT,
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "transport: Error while dialing: '
            'dial tcp {addr}: connect: connection refused"',
        },
    ),
    "first frame not SETTINGS": Case(
        lambda servers: _first_frame(servers, frame(0x6, 0, 0, b"12345678")),
        {
            "1.33": CONNECT_TIMEOUT,
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "initial http2 frame from '
            'server is not a settings frame: *http2.PingFrame"',
        },
    ),
    "hangs up after the preface": Case(
        lambda servers: _first_frame(servers, b"", hold=False),
        {
            "1.33": CONNECT_TIMEOUT,
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "error reading server '
            'preface: EOF"',
        },
    ),
    "HTTP/1.1 server": Case(
        lambda servers: _first_frame(servers, b"HTTP/1.1 400 Bad Request\r\n\r\n"),
        {
            "1.33": CONNECT_TIMEOUT,
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "error reading server '
            'preface: http2: frame too large"',
        },
    ),
    # 1.38 has no dial of its own to time out: a server that never sends SETTINGS runs the
    # Check's context out
    "silent server": Case(
        lambda servers: servers.handler(lambda reader, writer: reader.read()),
        {"1.33": CONNECT_TIMEOUT, "1.38": RPC_TIMEOUT},
    ),
    # grpc-go 1.85 credentials/tls.go ClientHandshake: crypto/tls's own text, and the ALPN
    # enforcement's (TLS mode is 1.37's, GRPCContainerProbeTLS)
    "TLS to a plaintext server": Case(
        _tls_to_plain,
        {
            "1.37": CONNECT_TIMEOUT,
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "transport: authentication '
            'handshake failed: tls: first record does not look like a TLS handshake"',
        },
        tls=True,
    ),
    "TLS without ALPN h2": Case(
        lambda servers: servers.raw(answered(b""), tls=servers.tls(alpn=False)),
        {
            "1.37": CONNECT_TIMEOUT,
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "transport: authentication '
            "handshake failed: credentials: cannot check peer: missing selected ALPN property. "
            "If you upgraded from a grpc-go version earlier than 1.67, your TLS connections may "
            "have stopped working due to ALPN enforcement. For more details, see: "
            'https://github.com/grpc/grpc-go/issues/434"',
        },
        tls=True,
    ),
    # grpc-go 1.82 internal/transport/readyreader: a plaintext connection is read by
    # syscall.Read on its descriptor, its error the bare errno; TLS reads keep net.OpError
    "reset during the call": Case(
        _reset_mid_call,
        {
            "1.33": RPC_FAILED + "Unavailable desc = error reading from server: "
            "read tcp {local}->{addr}: read: connection reset by peer",
            "1.37": RPC_FAILED + "Unavailable desc = error reading from server: "
            "connection reset by peer",
            "1.38": UNAVAILABLE_138 + "error reading from server: connection reset by peer",
        },
    ),
    "reset during a TLS call": Case(
        lambda servers: _reset_mid_call(servers, servers.tls(alpn=True)),
        {
            "1.37": RPC_FAILED + "Unavailable desc = error reading from server: "
            "read tcp {local}->{addr}: read: connection reset by peer",
            "1.38": UNAVAILABLE_138 + "error reading from server: "
            "read tcp {local}->{addr}: read: connection reset by peer",
        },
        tls=True,
    ),
    # x/net http2 Framer.ReadFrame: ErrFrameTooLarge's text, no size
    "frame over the size": Case(
        _raw(b"\x00\x50\x00\x00\x00\x00\x00\x00\x00" + b"x" * 100),
        {
            "1.33": RPC_FAILED + "Unavailable desc = error reading from server: "
            "http2: frame too large",
            "1.38": UNAVAILABLE_138 + "error reading from server: http2: frame too large",
        },
    ),
    # readServerPreface takes any SETTINGS frame, an ACK too
    "SETTINGS ACK as the preface": Case(
        lambda servers: _first_frame(servers, frame(0x4, 0x1, 0)),
        {"1.33": RPC_TIMEOUT},
    ),
    # -- a stream the server did not process ----------------------------------------------------
    # grpc-go stream.go csAttempt.shouldRetry: a first attempt refused (handleRSTStream
    # REFUSED_STREAM) or below a GOAWAY (handleGoAway) is sent again, transparently, once
    "REFUSED_STREAM, then served": Case(
        lambda servers: servers.handler(
            _scripted(lambda c, s, k: _on(s, RST_REFUSED) if k == 0 else _on(s, *HEALTHY))
        ),
        {"1.33": "service healthy"},
    ),
    "REFUSED_STREAM twice": Case(
        lambda servers: servers.handler(_scripted(lambda c, s, k: _on(s, RST_REFUSED))),
        {"1.33": RPC_FAILED + "Unavailable desc = " + REFUSED, "1.38": UNAVAILABLE_138 + REFUSED},
    ),
    "REFUSED_STREAM, retry unanswered": Case(_raw(RST_REFUSED), {"1.33": RPC_TIMEOUT}),
    "GOAWAY, then served on a new connection": Case(
        lambda servers: servers.handler(
            _scripted(lambda c, s, k: GOAWAY_0 if c == 0 else _on(s, *HEALTHY))
        ),
        {"1.33": "service healthy"},
    ),
    "GOAWAY, then nothing listening": Case(
        _goaway_then_nothing_listening,
        {
            "1.33": RPC_FAILED + 'Unavailable desc = connection error: desc = "transport: '
            'Error while dialing: dial tcp {addr}: connect: connection refused"',
            "1.38": UNAVAILABLE_138 + 'connection error: desc = "transport: Error while dialing: '
            'dial tcp {addr}: connect: connection refused"',
        },
    ),
    "GOAWAY, then hung up": Case(
        lambda servers: servers.handler(_scripted(lambda c, s, k: GOAWAY_0 if c == 0 else None)),
        {
            "1.33": RPC_FAILED + "Unavailable desc = error reading from server: EOF",
            "1.38": UNAVAILABLE_138 + "error reading from server: EOF",
        },
    ),
    # -- the answer's headers -------------------------------------------------------------------
    # grpc-go 1.79 http2_client.go operateHeaders: the content type alone says whether the
    # answer is gRPC (:status read only when it is not; strconv.Atoi; a 1xx head passed over);
    # a malformed grpc-status is Unknown. Before: :status checked first (strconv.ParseInt)
    "200 text/html": Case(
        _raw(headers([(":status", "200"), ("content-type", "text/html")], end_stream=True)),
        {
            "1.33": RPC_FAILED
            + 'Unknown desc = transport: received unexpected content-type "text/html"',
            "1.36": RPC_FAILED + "Unknown desc = unexpected HTTP status code received from "
            'server: 200 (OK); transport: received unexpected content-type "text/html"',
        },
    ),
    "200 without content-type": Case(
        _raw(headers([(":status", "200")], end_stream=True)),
        {
            "1.33": RPC_FAILED + "Unknown desc = malformed header: missing HTTP content-type",
            "1.36": RPC_FAILED + "Unknown desc = unexpected HTTP status code received from "
            "server: 200 (OK); malformed header: missing HTTP content-type",
        },
    ),
    "404 application/grpc": Case(
        _raw(headers([(":status", "404"), ("content-type", "application/grpc")], end_stream=True)),
        {
            "1.33": NOT_IMPLEMENTED
            + "unexpected HTTP status code received from server: 404 (Not Found)",
            "1.36": RPC_FAILED + "Unknown desc = ",
        },
    ),
    "503 application/grpc, grpc-status 14": Case(
        _raw(
            headers(
                [
                    (":status", "503"),
                    ("content-type", "application/grpc"),
                    ("grpc-status", "14"),
                    ("grpc-message", "down"),
                ],
                end_stream=True,
            )
        ),
        {
            "1.33": RPC_FAILED + "Unavailable desc = unexpected HTTP status code received from "
            "server: 503 (Service Unavailable)",
            "1.36": RPC_FAILED + "Unavailable desc = down",
            "1.38": UNAVAILABLE_138 + "down",
        },
    ),
    "no :status": Case(
        _raw(headers([("content-type", "application/grpc")]), health(SERVING), TRAILERS_OK),
        {
            "1.33": RPC_FAILED + "Internal desc = malformed header: missing HTTP status",
            "1.36": "service healthy",
        },
    ),
    "no :status, trailers only": Case(
        _raw(
            headers([("content-type", "application/grpc"), ("grpc-status", "0")], end_stream=True)
        ),
        {
            "1.33": RPC_FAILED + "Internal desc = malformed header: missing HTTP status",
            "1.36": RPC_FAILED + "Internal desc = cardinality violation: received no response "
            "message from non-server-streaming RPC",
        },
    ),
    ":status not a number": Case(
        _raw(headers([(":status", "abc"), ("content-type", "text/plain")], end_stream=True)),
        {
            "1.33": RPC_FAILED + "Internal desc = transport: malformed http-status: "
            'strconv.ParseInt: parsing "abc": invalid syntax',
            "1.36": RPC_FAILED + "Internal desc = transport: malformed http-status: "
            'strconv.Atoi: parsing "abc": invalid syntax',
        },
    ),
    ":status not a number, application/grpc": Case(
        _raw(headers([(":status", "abc"), ("content-type", "application/grpc")], end_stream=True)),
        {
            "1.33": RPC_FAILED + "Internal desc = transport: malformed http-status: "
            'strconv.ParseInt: parsing "abc": invalid syntax',
            "1.36": RPC_FAILED + "Unknown desc = ",
        },
    ),
    "grpc-status not a number": Case(
        _raw(headers([*OK_HEAD, ("grpc-status", "x")], end_stream=True)),
        {
            "1.33": RPC_FAILED + "Internal desc = transport: malformed grpc-status: "
            'strconv.ParseInt: parsing "x": invalid syntax',
            "1.36": RPC_FAILED + "Unknown desc = transport: malformed grpc-status: "
            'strconv.ParseInt: parsing "x": invalid syntax',
        },
    ),
    "103 head, then the answer": Case(
        _raw(headers([(":status", "103"), ("link", "</x>")]), *HEALTHY),
        {
            "1.33": RPC_FAILED + "Unknown desc = unexpected HTTP status code received from "
            "server: 103 (Early Hints); malformed header: missing HTTP content-type",
            "1.36": "service healthy",
        },
    ),
    "103 head that ends the stream": Case(
        _raw(headers([(":status", "103")], end_stream=True)),
        {
            "1.33": RPC_FAILED + "Unknown desc = unexpected HTTP status code received from "
            "server: 103 (Early Hints); malformed header: missing HTTP content-type",
            "1.36": RPC_FAILED + "Internal desc = protocol error: informational header with "
            "status code 103 must not have END_STREAM set",
        },
    ),
    "a second head mid-stream": Case(
        _raw(headers(OK_HEAD), headers(OK_HEAD)),
        {
            "1.33": RPC_FAILED
            + "Internal desc = a HEADERS frame cannot appear in the middle of a stream"
        },
    ),
    # http2_client.go handleRSTStream: a code outside http2ErrConvTab is Unknown
    "RST_STREAM with an unknown code": Case(
        _raw(frame(0x3, 0, 1, struct.pack(">I", 0xE))),
        {
            "1.33": RPC_FAILED + "Unknown desc = stream terminated by RST_STREAM with error "
            "code: unknown error code 0xe"
        },
    ),
    "trailers only, grpc-status 14": Case(
        _raw(
            headers(
                [*OK_HEAD, ("grpc-status", "14"), ("grpc-message", "going away")], end_stream=True
            )
        ),
        {
            "1.33": RPC_FAILED + "Unavailable desc = going away",
            "1.38": UNAVAILABLE_138 + "going away",
        },
    ),
    # grpc-go 1.82 internal/transport/client_stream.go: up to nonGRPCDataMaxLen (1 KiB) of a
    # non-gRPC answer's body is read into its status (`\ndata: %q`), until it ends
    "404 text/html with a body": Case(
        _raw(headers(NOT_FOUND_HTML), frame(0x0, 0x1, 1, b"not found\n")),
        {"1.33": NOT_GRPC_404, "1.37": NOT_GRPC_404 + '\ndata: "not found\\n"'},
    ),
    "404 text/html, body ended by trailers": Case(
        _raw(
            headers(NOT_FOUND_HTML),
            frame(0x0, 0, 1, b"abc"),
            headers([("x-a", "b")], end_stream=True),
        ),
        {"1.33": NOT_GRPC_404, "1.37": NOT_GRPC_404 + '\ndata: "abc"'},
    ),
    "404 text/html, a body over 1 KiB": Case(
        _raw(headers(NOT_FOUND_HTML), frame(0x0, 0, 1, b"y" * 2000)),
        {"1.33": NOT_GRPC_404, "1.37": NOT_GRPC_404 + '\ndata: "' + "y" * 1024 + '"'},
    ),
    "404 text/html, the body never sent": Case(
        _raw(headers(NOT_FOUND_HTML)), {"1.33": NOT_GRPC_404, "1.37": RPC_TIMEOUT}
    ),
    # -- the message ----------------------------------------------------------------------------
    # grpc-go 1.79 stream.go (clientStream.RecvMsg): "cardinality violation" for no message or
    # two; before, recv's io.EOF as it is, and "client streaming protocol violation"
    "no message": Case(
        _raw(headers(OK_HEAD), TRAILERS_OK),
        {
            "1.33": "error: health rpc probe failed: EOF",
            "1.36": RPC_FAILED + "Internal desc = cardinality violation: received no response "
            "message from non-server-streaming RPC",
        },
    ),
    "two messages": Case(
        _raw(headers(OK_HEAD), health(SERVING), health(SERVING), TRAILERS_OK),
        {
            "1.33": RPC_FAILED + "Unknown desc = grpc: client streaming protocol violation: "
            "get <nil>, want <EOF>",
            "1.36": RPC_FAILED + "Internal desc = cardinality violation: expected <EOF> for non "
            "server-streaming RPCs, but received another message",
        },
    ),
}


def _text(case: Case, release: str) -> str | None:
    """The case's text for `release`: its own, or the nearest earlier release's."""
    keyed = [key for key in case.texts if RELEASES.index(key) <= RELEASES.index(release)]
    return case.texts[keyed[-1]] if keyed else None


PARAMS = [
    pytest.param(name, release, id=f"{name}-{release}")
    for name, case in CASES.items()
    for release in RELEASES
    if _text(case, release) is not None
]


@pytest.mark.parametrize(("name", "release"), PARAMS)
async def test_each_release_says_what_its_grpc_go_says(
    servers: Servers, name: str, release: str
) -> None:
    case = CASES[name]
    port = await case.server(servers)
    timeout = 0.3 if "300ms" in (_text(case, release) or "") else 1.0
    attempt = await grpc_lean.probe(
        "127.0.0.1", port, "", timeout, kube_version=release, tls=case.tls
    )
    expected = (_text(case, release) or "").format(addr=f"127.0.0.1:{port}", local=servers.local)
    assert attempt.output == expected


@pytest.mark.parametrize(("release", "healthy"), [("1.37", True), ("1.38", False)])
async def test_a_connection_lost_before_ready_fails_only_a_new_client(
    servers: Servers, monkeypatch: pytest.MonkeyPatch, release: str, healthy: bool
) -> None:
    """1.33-1.37 (grpc.go's blocking dial) connect again after grpc-go's back-off (shortened
    here) and are answered; 1.38's NewClient fails its fail-fast Check on the first connection
    lost (picker_wrapper.go), with the transport's error, whose words are a race between its
    reader and its writer in grpc-go."""
    monkeypatch.setattr(grpc_lean, "BACKOFF_BASE", 0.05)
    port = await servers.raw(answered(*HEALTHY), ready=lambda n: n > 0)
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0, kube_version=release)
    if healthy:
        assert attempt.output == "service healthy"
    else:
        assert attempt.output.startswith(f'error: failed to connect service at "127.0.0.1:{port}"')
        assert not attempt.timed_out
