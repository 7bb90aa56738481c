"""The lean gRPC handler (`probetui.probe.grpc_lean`) against HTTP/2 servers that answer what
grpc.aio servers never do: RST_STREAM, an HTTP error status, a missing trailer, an oversized
message, a connection refused before it was READY, TLS without ALPN h2. Each answer is read as
grpc-go's HTTP/2 client reads it (`http2_client.go` operateHeaders, handleRSTStream, handleData;
`rpc_util.go` recvMsg), and the request is checked as grpc-go writes it (createHeaderFields).
tests/probe/test_grpc.py holds its common answers to the grpcio reference's.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hpack
import pytest

from probetui.probe import grpc_lean
from probetui.probe.base import Result
from tests.probe.conftest import NOT_SERVING, SERVING, ServerCert, StartGRPC

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", kind, flags, stream) + payload


def headers(fields: list[tuple[str, str]], *, end_stream: bool = False) -> bytes:
    # END_HEADERS, and END_STREAM for a trailers-only answer or the trailers
    return frame(0x1, 0x4 | (0x1 if end_stream else 0), 1, hpack.Encoder().encode(fields))


def message(body: bytes, *, size: int | None = None) -> bytes:
    return frame(0x0, 0, 1, b"\x00" + struct.pack(">I", len(body) if size is None else size) + body)


def health(status: int) -> bytes:
    return message(bytes((0x08, status)))


OK_HEAD = [(":status", "200"), ("content-type", "application/grpc")]
SETTINGS = frame(0x4, 0, 0)


@dataclass
class Seen:
    """What one connection sent: its request headers, in order, and its request message."""

    headers: list[tuple[str, str]] = field(default_factory=list)
    data: bytes = b""
    frames: list[tuple[int, int]] = field(default_factory=list)


Answer = Callable[[int, Seen], bytes | None]


class RawH2:
    """A scripted HTTP/2 server on 127.0.0.1. Its Nth connection hangs up before its SETTINGS
    when `ready(n)` is false; else, once the request is in, it writes `answer(n, seen)` and
    holds the connection until the client closes it (None: it hangs up instead)."""

    def __init__(
        self,
        answer: Answer,
        *,
        ready: Callable[[int], bool] = lambda n: True,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answer = answer
        self.ready = ready
        self.tls = tls
        self.seen: list[Seen] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = len(self.seen)
        seen = Seen()
        self.seen.append(seen)
        try:
            if not self.ready(index):
                return
            assert await reader.readexactly(len(PREFACE)) == PREFACE
            writer.write(SETTINGS)
            decoder = hpack.Decoder()
            while True:
                head = await reader.readexactly(9)
                kind, flags = head[3], head[4]
                payload = await reader.readexactly(int.from_bytes(head[:3], "big"))
                seen.frames.append((kind, flags))
                if kind == 0x1:
                    seen.headers = list(decoder.decode(payload))
                elif kind == 0x0:
                    seen.data += payload
                    if flags & 0x1:
                        break
            answer = self.answer(index, seen)
            if answer is None:
                return
            writer.write(answer)
            await writer.drain()
            while await reader.read(65536):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


StartRaw = Callable[..., Awaitable[tuple[RawH2, int]]]


@pytest.fixture
async def raw_h2() -> AsyncIterator[StartRaw]:
    """Start `RawH2` servers: `server, port = await raw_h2(answer, ready=..., tls=...)`."""
    servers: list[RawH2] = []

    async def start(answer: Answer, **kwargs: Any) -> tuple[RawH2, int]:
        server = RawH2(answer, **kwargs)
        servers.append(server)
        return server, await server.start()

    yield start
    for server in servers:
        server.close()


def answered(*frames: bytes) -> Answer:
    body = b"".join(frames)
    return lambda n, seen: body


TRAILERS_OK = headers([("grpc-status", "0")], end_stream=True)


def rpc_error(code: str, desc: str) -> str:
    return f"error: health rpc probe failed: rpc error: code = {code} desc = {desc}"


async def test_request_is_grpc_gos(raw_h2: StartRaw) -> None:
    """createHeaderFields: :method, :scheme, :path, :authority, content-type, user-agent, te,
    grpc-timeout (the time left, at most 8 digits and a unit), in that order; the
    HealthCheckRequest's service as field 1; the stream ended by the DATA frame."""
    server, port = await raw_h2(answered(headers(OK_HEAD), health(SERVING), TRAILERS_OK))
    attempt = await grpc_lean.probe("127.0.0.1", port, "db", 1.0, kube_version="v1.31.2")
    assert attempt.output == "service healthy"
    seen = server.seen[0]
    names = [name for name, _ in seen.headers]
    assert names == [":method", ":scheme", ":path", ":authority", "content-type", "user-agent",
                     "te", "grpc-timeout"]  # fmt: skip
    values = dict(seen.headers)
    assert values[":method"] == "POST"
    assert values[":scheme"] == "http"
    assert values[":path"] == "/grpc.health.v1.Health/Check"
    assert values[":authority"] == f"127.0.0.1:{port}"
    assert values["content-type"] == "application/grpc"
    # grpc-go appends itself as the kubelet release vendors it (1.31 plays the nearest, 1.33's)
    assert values["user-agent"] == "kube-probe/1.31 grpc-go/1.68.1"
    assert values["te"] == "trailers"
    timeout = re.fullmatch(r"(\d{1,8})([numS])", values["grpc-timeout"])
    assert timeout is not None
    scale = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "S": 1.0}[timeout.group(2)]
    assert 0.5 < int(timeout.group(1)) * scale <= 1.0
    assert seen.data == b"\x00\x00\x00\x00\x04\x0a\x02db"
    assert seen.frames[-1] == (0x0, 0x1)


async def test_control_frames_before_the_answer_are_acknowledged() -> None:
    """A second SETTINGS and a PING ahead of the answer are acknowledged while the client waits
    for it (RFC 9113 §6.5.3, §6.7): this server answers only once both ACKs are in."""
    acks: list[tuple[int, int]] = []

    async def frame_in(reader: asyncio.StreamReader) -> tuple[int, int, bytes]:
        head = await reader.readexactly(9)
        return head[3], head[4], await reader.readexactly(int.from_bytes(head[:3], "big"))

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(len(PREFACE))
        writer.write(SETTINGS)
        while (await frame_in(reader))[:2] != (0x0, 0x1):
            pass
        writer.write(frame(0x4, 0, 0, struct.pack(">HI", 0x4, 1 << 20)))
        writer.write(frame(0x6, 0, 0, b"12345678"))
        while len(acks) < 2:
            kind, flags, payload = await frame_in(reader)
            if flags & 0x1 and kind in (0x4, 0x6):
                acks.append((kind, len(payload)))
        writer.write(headers(OK_HEAD) + health(NOT_SERVING) + TRAILERS_OK)
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        attempt = await grpc_lean.probe("127.0.0.1", server.sockets[0].getsockname()[1], "", 1.0)
    finally:
        server.close()
    assert attempt.output == 'service unhealthy (responded with "NOT_SERVING")'
    assert sorted(acks) == [(0x4, 0), (0x6, 8)]


async def test_rst_stream_is_its_grpc_code(raw_h2: StartRaw) -> None:
    """handleRSTStream: CANCEL is Canceled, with the HTTP/2 code's name (REFUSED_STREAM, sent
    again transparently, is in tests/probe/test_grpc_releases.py)."""
    _, port = await raw_h2(answered(frame(0x3, 0, 1, struct.pack(">I", 0x8))))
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == rpc_error(
        "Canceled", "stream terminated by RST_STREAM with error code: CANCEL"
    )


async def test_http_error_status_is_its_grpc_code(raw_h2: StartRaw) -> None:
    """operateHeaders: a 503 with a text body is Unavailable, naming the status and the
    content type, both."""
    status = [(":status", "503"), ("content-type", "text/plain")]
    _, port = await raw_h2(answered(headers(status, end_stream=True)))
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == rpc_error(
        "Unavailable",
        "unexpected HTTP status code received from server: 503 (Service Unavailable); "
        'transport: received unexpected content-type "text/plain"',
    )


async def test_trailers_only_status_and_percent_encoded_message(raw_h2: StartRaw) -> None:
    """A trailers-only answer carries the status; grpc-message is percent-decoded, a stray %
    kept (decodeGrpcMessage)."""
    fields = [*OK_HEAD, ("grpc-status", "5"), ("grpc-message", "no%20such%2Gservice%")]
    _, port = await raw_h2(answered(headers(fields, end_stream=True)))
    attempt = await grpc_lean.probe("127.0.0.1", port, "x", 1.0)
    assert attempt.output == rpc_error("NotFound", "no such%2Gservice%")


async def test_status_outside_the_known_codes(raw_h2: StartRaw) -> None:
    """codes.Code.String() of a number it has no name for is `Code(N)`."""
    _, port = await raw_h2(answered(headers([*OK_HEAD, ("grpc-status", "42")], end_stream=True)))
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == rpc_error("Code(42)", "")


async def test_unknown_serving_status_is_its_number(raw_h2: StartRaw) -> None:
    """protobuf-go prints an enum value without a name as its number."""
    _, port = await raw_h2(answered(headers(OK_HEAD), health(7), TRAILERS_OK))
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == 'service unhealthy (responded with "7")'


async def test_stream_ended_without_trailers(raw_h2: StartRaw) -> None:
    """handleData: a DATA frame that ends the stream before any trailers is Internal."""
    ended = frame(0x0, 0x1, 1, b"\x00\x00\x00\x00\x02\x08\x01")
    _, port = await raw_h2(answered(headers(OK_HEAD), ended))
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == rpc_error(
        "Internal", "server closed the stream without sending trailers"
    )


async def test_message_over_the_limit(raw_h2: StartRaw) -> None:
    """recvMsg: a message over grpc-go's 4 MiB default is ResourceExhausted, as soon as its
    length prefix is read."""
    _, port = await raw_h2(answered(headers(OK_HEAD), message(b"", size=5 << 20)))
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == rpc_error(
        "ResourceExhausted", "grpc: received message larger than max (5242880 vs. 4194304)"
    )


async def test_connection_closed_mid_call_is_unavailable(raw_h2: StartRaw) -> None:
    """A server that hangs up after the request, before any answer: Unavailable."""
    _, port = await raw_h2(lambda n, seen: None)
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == rpc_error("Unavailable", "error reading from server: EOF")


async def test_not_ready_connections_are_tried_again(
    raw_h2: StartRaw, monkeypatch: pytest.MonkeyPatch
) -> None:
    """WithBlock: a connection closed before the server's SETTINGS is not READY; grpc-go backs
    off and dials again within the same deadline (the backoff shortened here)."""
    monkeypatch.setattr(grpc_lean, "BACKOFF_BASE", 0.05)
    server, port = await raw_h2(
        answered(headers(OK_HEAD), health(SERVING), TRAILERS_OK), ready=lambda n: n > 0
    )
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 1.0)
    assert attempt.output == "service healthy"
    assert len(server.seen) == 2


async def test_tls_server_without_alpn_h2_never_gets_ready(
    raw_h2: StartRaw, server_cert: ServerCert, tmp_path: Path
) -> None:
    """grpc-go's TLS credentials refuse a handshake that did not select h2 by ALPN: the dial
    is retried until the deadline, the connect-timeout text."""
    (tmp_path / "cert.pem").write_bytes(server_cert.chain_pem)
    (tmp_path / "key.pem").write_bytes(server_cert.key_pem)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    _, port = await raw_h2(answered(b""), tls=context)
    attempt = await grpc_lean.probe("127.0.0.1", port, "", 0.3, tls=True)
    assert attempt.output == (
        f'timeout: failed to connect service "127.0.0.1:{port}" within 300ms: '
        "context deadline exceeded"
    )
    assert attempt.timed_out


async def test_same_attempt_as_the_reference_for_a_grpc_aio_server(grpc_server: StartGRPC) -> None:
    """Every field but latency and start agrees with the grpcio reference's."""
    from tests.probe import grpc_oracle as reference

    server = await grpc_server(statuses={"": SERVING, "db": NOT_SERVING})
    for service in ("", "db", "nope"):
        lean = await grpc_lean.probe("127.0.0.1", server.port, service, 1.0)
        ref = await reference.probe("127.0.0.1", server.port, service, 1.0)
        assert (lean.handler, lean.target, lean.result, lean.output, lean.error, lean.timed_out) == (
            ref.handler, ref.target, ref.result, ref.output, ref.error, ref.timed_out)  # fmt: skip


@pytest.mark.parametrize(
    ("kube_version", "suffix"),
    [("1.35", "grpc-go/1.72.2"), ("v1.37.2", "grpc-go/1.82.1"), ("1.38", "grpc-go/1.85.0")],
)
def test_the_user_agent_names_the_grpc_go_each_kubelet_release_vendors(
    kube_version: str, suffix: str
) -> None:
    """k8s.io/kubernetes go.mod: google.golang.org/grpc at the release's version; grpc-go's
    `WithUserAgent` (dialoptions.go) makes the text given, a space, and `grpcUA`
    ("grpc-go/" + Version)."""
    assert grpc_lean.grpc_go_agent(kube_version) == suffix


def test_a_steady_answer_is_decoded_once_and_a_new_one_after_it_as_hpack_reads_it() -> None:
    """_Conn.decode: the same blocks on a new connection come from the decoded ones, no decoder
    built; a block not seen after them is read by a decoder that first reads those blocks, so
    the dynamic table the server filled is there (RFC 7541 §2.3.2)."""
    grpc_lean._DECODED.clear()
    encoder = hpack.Encoder()
    head = encoder.encode([(":status", "200"), ("content-type", "application/grpc")])
    trailers = encoder.encode([("grpc-status", "0"), ("content-type", "application/grpc")])
    first = grpc_lean._Conn(None, False)  # type: ignore[arg-type]
    fields = [first.decode(head), first.decode(trailers)]
    assert fields[1] == [(b"grpc-status", b"0"), (b"content-type", b"application/grpc")]

    again = grpc_lean._Conn(None, False)  # type: ignore[arg-type]
    assert [again.decode(head), again.decode(trailers)] == fields
    assert again._decoder is None

    # the next block names the dynamic table's entries by index: only the blocks before it
    # make it readable
    other = encoder.encode([("grpc-status", "0"), ("grpc-message", "late")])
    assert encoder.header_table.dynamic_entries
    third = grpc_lean._Conn(None, False)  # type: ignore[arg-type]
    third.decode(head)
    third.decode(trailers)
    assert third.decode(other) == [(b"grpc-status", b"0"), (b"grpc-message", b"late")]
    assert third._decoder is not None
