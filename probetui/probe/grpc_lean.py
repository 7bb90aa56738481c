"""Run the gRPC health handler on one HTTP/2 connection over a raw asyncio socket.

It is `pkg/probe/grpc` (docs/kubelet-behaviour.md §15.1-15.2), lean.

The same attempt as `probetui.probe.grpc` (the reference, on grpcio) at a fraction of the CPU and
memory. grpcio builds a channel, a resolver, a subchannel and a completion queue for each
attempt, and starts and stops gRPC core's threads whenever its last channel closes, which a
connection per attempt makes every time; a health check needs a socket, the HTTP/2 preface, one
HEADERS and one DATA frame out, and a few frames back.

What grpc-go does for the kubelet, done here:

- the connection (`http2_client.newHTTP2Client`): the ProbeDialer's connect
  (`probetui.probe.tcp`), TLS for `mode: TLS` (InsecureSkipVerify, TLS 1.2 or later, ALPN `h2`
  required, SNI for names only), the client preface and SETTINGS, then the server's first frame,
  which must be a SETTINGS frame: the connection is READY only then. Each try has grpc-go's
  connect deadline (20 s, `minConnectTimeout`);
- 1.33-1.37 dial with `grpc.WithBlock`: a connection that fails before READY is tried again
  after grpc-go's connection backoff (1 s, times 1.6 each time, jitter 0.2) until the deadline,
  whose end is the connect-timeout text. 1.38 makes the client with `grpc.NewClient` and its
  fail-fast Check fails on the first connection that fails, Unavailable with grpc-go's
  `connection error: desc = "..."`;
- the Check call on stream 1: grpc-go's request headers in its order (`grpc-timeout` the time
  left), the request message, and the response read as grpc-go's HTTP/2 client reads it
  (`operateHeaders`, `handleData`, `handleRSTStream`, `handleGoAway`, `recvMsg`): the HTTP
  status and content type, `grpc-status` and the percent-decoded `grpc-message` of the trailers
  (or a trailers-only answer), RST_STREAM codes mapped to gRPC codes, one length-prefixed message
  of at most 4 MiB; every RPC error as grpc-go's `status.Error` text;
- a first attempt the server did not process (RST_STREAM REFUSED_STREAM, a GOAWAY below its
  stream) is sent again once, transparently (`csAttempt.shouldRetry`): on a new stream, or after
  a GOAWAY on a new connection;
- one deadline over all of it, as the kubelet's single context.

What differs by release is in `GrpcGo`: the kubelet's dial (1.38) and the grpc-go it vendors
(1.68.1 in 1.33 to 1.85.0 in 1.38; docs/kubelet-versions.md V15).

Response header blocks are decoded by `hpack` (Huffman codes, the dynamic table); the request's
are written here as literals, which any HPACK decoder reads.
"""

from __future__ import annotations

import asyncio
import random
import re
import ssl
import struct
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from functools import lru_cache
from http import HTTPStatus
from typing import TypeVar

from probetui.probe import tcp
from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result, user_agent
from probetui.probe.gotext import (
    GRPC_HEALTHY,
    crypto_tls_error,
    errno_text,
    go_quote,
    grpc_connect_error,
    grpc_rpc_error,
    grpc_rpc_timeout,
    grpc_unhealthy,
    grpc_unimplemented,
    join_host_port,
    op_error,
    stream_error,
)
from probetui.probe.gotext import grpc_connect_timeout as connect_timeout_text
from probetui.probe.lean_conn import Deadline, Stream

_T = TypeVar("_T")

# -- HTTP/2 (RFC 9113) ---------------------------------------------------------------------------

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS = 0x0, 0x1, 0x3, 0x4
_PING, _GOAWAY, _WINDOW_UPDATE, _CONTINUATION = 0x6, 0x7, 0x8, 0x9
_END_STREAM = _ACK = 0x1
_END_HEADERS = 0x4
_PADDED = 0x8
_PRIORITY = 0x20
# the frame size this client announces (the protocol's default): a larger frame is an error
_MAX_FRAME = 16384
# grpc-go's default largest message a client receives (defaultClientMaxReceiveMessageSize)
_MAX_MESSAGE = 4 << 20
# a response's header blocks, bounded: a health answer's headers take a few dozen bytes
_MAX_HEADER_BLOCK = 1 << 20
# inbound flow control: the window the peer may fill (the protocol's default) is given back once
# a quarter of it was read, as grpc-go's inFlow does
_WINDOW = 65535
_WINDOW_REFILL = _WINDOW // 4
_STREAM = 1

# grpc-go's connection backoff (backoff.DefaultConfig)
BACKOFF_BASE = 1.0
_BACKOFF_MULTIPLIER = 1.6
_BACKOFF_JITTER = 0.2
_BACKOFF_MAX = 120.0
# grpc-go's deadline for one connection to get READY (clientconn.go minConnectTimeout)
MIN_CONNECT_TIMEOUT = 20.0
# grpc-go 1.82's nonGRPCDataMaxLen: the body of a non-gRPC answer kept for its status message
_NON_GRPC_BODY = 1024

# codes.Code.String() of grpc-go, by number
_CODE_NAMES = (
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
)
_UNKNOWN, _DEADLINE_EXCEEDED, _RESOURCE_EXHAUSTED, _UNIMPLEMENTED = 2, 4, 8, 12
_INTERNAL, _UNAVAILABLE = 13, 14

# grpc-go's http2ErrConvTab: an RST_STREAM's HTTP/2 error code as a gRPC code, and its name
_RST_CODES = {
    0x0: ("NO_ERROR", _INTERNAL),
    0x1: ("PROTOCOL_ERROR", _INTERNAL),
    0x2: ("INTERNAL_ERROR", _INTERNAL),
    0x3: ("FLOW_CONTROL_ERROR", _RESOURCE_EXHAUSTED),
    0x4: ("SETTINGS_TIMEOUT", _INTERNAL),
    0x5: ("STREAM_CLOSED", _INTERNAL),
    0x6: ("FRAME_SIZE_ERROR", _INTERNAL),
    0x7: ("REFUSED_STREAM", _UNAVAILABLE),
    0x8: ("CANCEL", 1),
    0x9: ("COMPRESSION_ERROR", _INTERNAL),
    0xA: ("CONNECT_ERROR", _INTERNAL),
    0xB: ("ENHANCE_YOUR_CALM", _RESOURCE_EXHAUSTED),
    0xC: ("INADEQUATE_SECURITY", 7),
    0xD: ("HTTP_1_1_REQUIRED", _INTERNAL),
}

# grpc-go's HTTPStatusConvTab: a response whose HTTP status is not 200, as a gRPC code
_HTTP_CODES = {400: _INTERNAL, 401: 16, 403: 7, 404: _UNIMPLEMENTED, 429: _UNAVAILABLE}
_HTTP_CODES.update(dict.fromkeys((502, 503, 504), _UNAVAILABLE))
# net/http's StatusText where it words a status otherwise than Python's HTTPStatus
_GO_STATUS_TEXT = {414: "Request URI Too Long", 418: "I'm a teapot"}

# Go's %T of the frame x/net's Framer.ReadFrame makes of each frame type (the reader of
# grpc-go's client decodes header blocks as it reads them: MetaHeadersFrame)
_FRAME_TYPE_NAMES = {
    0x0: "*http2.DataFrame",
    0x1: "*http2.MetaHeadersFrame",
    0x2: "*http2.PriorityFrame",
    0x3: "*http2.RSTStreamFrame",
    0x5: "*http2.PushPromiseFrame",
    0x6: "*http2.PingFrame",
    0x7: "*http2.GoAwayFrame",
    0x8: "*http2.WindowUpdateFrame",
}

# grpc-go's TLS credentials (credentials/tls.go) on a handshake that agreed no ALPN protocol
_ALPN_MISSING = (
    "credentials: cannot check peer: missing selected ALPN property. If you upgraded from a "
    "grpc-go version earlier than 1.67, your TLS connections may have stopped working due to "
    "ALPN enforcement. For more details, see: https://github.com/grpc/grpc-go/issues/434"
)

# strconv's syntax for a base-10 integer
_GO_INT = re.compile(rb"[+-]?[0-9]+")

# grpc.health.v1.HealthCheckResponse.ServingStatus names
_SERVING = 1
_STATUS_NAMES = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + struct.pack(">BBI", kind, flags, stream) + payload


# the client preface and an empty SETTINGS frame: grpc-go's defaults are the protocol's
_CLIENT_PREFACE = _PREFACE + _frame(_SETTINGS, 0, 0)
_SETTINGS_ACK = _frame(_SETTINGS, _ACK, 0)


def _hpack_int(value: int, prefix_bits: int, first: int) -> bytes:
    """An HPACK integer (RFC 7541 §5.1) under `first`'s high bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out = bytearray((first | limit,))
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _literal(name: int | bytes, value: bytes) -> bytes:
    """A literal header field without indexing (RFC 7541 §6.2.2), the name by its static-table
    index or as a literal; no Huffman coding."""
    if isinstance(name, int):
        head = _hpack_int(name, 4, 0x00)
    else:
        head = b"\x00" + _hpack_int(len(name), 7, 0x00) + name
    return head + _hpack_int(len(value), 7, 0x00) + value


@lru_cache(maxsize=4096)
def _request_block(scheme: str, authority: str, agent: str) -> bytes:
    """The request's header block up to `grpc-timeout`, in grpc-go's order
    (http2_client.createHeaderFields)."""
    return b"".join(
        (
            b"\x83",  # :method POST (static 3)
            b"\x87" if scheme == "https" else b"\x86",  # :scheme (static 7, 6)
            _literal(4, b"/grpc.health.v1.Health/Check"),  # :path
            _literal(1, authority.encode()),  # :authority
            _literal(31, b"application/grpc"),  # content-type
            _literal(58, agent.encode()),  # user-agent
            _literal(b"te", b"trailers"),
        )
    )


@lru_cache(maxsize=4096)
def _request_message(service: str, stream: int = _STREAM) -> bytes:
    """HealthCheckRequest{service} as one gRPC length-prefixed message, in a DATA frame that
    ends the stream."""
    raw = service.encode()
    body = b"\x0a" + _varint(len(raw)) + raw if raw else b""
    return _frame(_DATA, _END_STREAM, stream, b"\x00" + struct.pack(">I", len(body)) + body)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _grpc_timeout(seconds: float) -> bytes:
    """grpc-go's encodeTimeout: the time left in the finest unit that keeps it to 8 digits,
    rounded up."""
    nanos = int(seconds * 1e9)
    if nanos <= 0:
        return b"0n"
    for unit, size in ((b"n", 1), (b"u", 1_000), (b"m", 1_000_000), (b"S", 1_000_000_000)):
        value = -(-nanos // size)
        if value <= 99_999_999:
            return str(value).encode() + unit
    return str(-(-nanos // 60_000_000_000)).encode() + b"M"


def _backoff(retries: int) -> float:
    """grpc-go's backoff.Exponential.Backoff for the `retries`th retry."""
    delay = BACKOFF_BASE
    for _ in range(retries):
        delay *= _BACKOFF_MULTIPLIER
        if delay >= _BACKOFF_MAX:
            delay = _BACKOFF_MAX
            break
    return max(0.0, delay * (1 + _BACKOFF_JITTER * (random.random() * 2 - 1)))


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """grpc-go's TLS credentials with InsecureSkipVerify (KEP-4939): TLS 1.2 or later, ALPN h2."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["h2"])
    return context


# -- the release -----------------------------------------------------------------------------------

# the grpc-go release each kubelet release vendors (k8s.io/kubernetes go.mod, the newest patch
# served of each minor): grpc-go appends "grpc-go/VERSION" to the kubelet's user agent
GRPC_GO_BY_MINOR = {
    33: "1.68.1",
    34: "1.72.1",
    35: "1.72.2",
    36: "1.79.3",
    37: "1.82.1",
    38: "1.85.0",
}


@dataclass(frozen=True, slots=True)
class GrpcGo:
    """What one kubelet release's gRPC probe does that another's does not: how its
    `pkg/probe/grpc/grpc.go` makes the client, and the grpc-go release it vendors."""

    # google.golang.org/grpc's version, as the user agent names it
    version: str
    # grpc.go from 1.38: `grpc.NewClient` and a fail-fast Check, no blocking dial; an Unavailable
    # Check is "failed to connect service"
    new_client: bool
    # grpc-go 1.79 operateHeaders: the content type alone says whether an answer is gRPC, a 1xx
    # head is passed over; stream.go's "cardinality violation" texts
    content_type_decides: bool
    # grpc-go 1.82: the first KiB of a non-gRPC answer's body goes into its status message
    non_grpc_body: bool
    # grpc-go 1.82 readyreader: a plaintext connection is read by syscall.Read on its raw
    # descriptor, so a read's error is the bare errno, with no net.OpError around it
    raw_reads: bool


def _minor(kube_version: str) -> int:
    """The modelled minor release nearest to `kube_version` (1.35 for one that is not a
    version)."""
    _, _, minor = kube_version.removeprefix("v").partition(".")
    digits = minor.split(".")[0]
    number = int(digits) if digits.isdigit() else 35
    return min(GRPC_GO_BY_MINOR, key=lambda m: abs(m - number))


@lru_cache(maxsize=64)
def client_for(kube_version: str) -> GrpcGo:
    """The gRPC client of the kubelet whose version is `kube_version`."""
    minor = _minor(kube_version)
    version = GRPC_GO_BY_MINOR[minor]
    release = tuple(int(part) for part in version.split("."))
    return GrpcGo(
        version=version,
        new_client=minor >= 38,
        content_type_decides=release >= (1, 79),
        non_grpc_body=release >= (1, 82),
        raw_reads=release >= (1, 82),
    )


def grpc_go_agent(kube_version: str) -> str:
    """What grpc-go adds to the user agent of the kubelet whose version is `kube_version`."""
    return f"grpc-go/{client_for(kube_version).version}"


# -- errors ---------------------------------------------------------------------------------------


class _NotReady(Exception):
    """The connection failed before it was READY. `str()` is the error grpc-go's picker gives a
    fail-fast RPC then: the transport's ConnectionError, `connection error: desc = "..."`."""

    def __init__(self, desc: str) -> None:
        super().__init__(f"connection error: desc = {go_quote(desc)}")


class _RpcError(Exception):
    """The Check call failed with a gRPC status (`code` None: with an error that is no status,
    printed as it is)."""

    def __init__(self, code: int | None, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class _Unprocessed(Exception):
    """The server did not process the stream: an RST_STREAM REFUSED_STREAM, or a GOAWAY below
    the stream's ID (`drained`: the connection takes no new streams)."""

    def __init__(self, error: _RpcError, *, drained: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.drained = drained


def _code_name(code: int) -> str:
    return _CODE_NAMES[code] if 0 <= code < len(_CODE_NAMES) else f"Code({code})"


def _failure_text(error: _RpcError, addr: str, timeout: float, client: GrpcGo) -> str:
    """grpc.go's Failure output for a Check that failed with `error`."""
    if error.code is None:
        return grpc_rpc_error(error.message)
    if error.code == _UNAVAILABLE and client.new_client:
        return grpc_connect_error(addr, error.message)
    if error.code == _UNIMPLEMENTED:
        return grpc_unimplemented(error.message)
    if error.code == _DEADLINE_EXCEEDED:
        return grpc_rpc_timeout(timeout)
    # grpc-go's status error: `rpc error: code = <Code> desc = <message>`
    return grpc_rpc_error(f"rpc error: code = {_code_name(error.code)} desc = {error.message}")


def _io_error(op: str, exc: OSError, stream: Stream, raw: bool = False) -> str:
    """Go's text for a failed read or write on the connection (TLS's own words for a TLS
    error). `raw`: a read by grpc-go's raw reader (`GrpcGo.raw_reads`), whose error is the
    errno alone."""
    if isinstance(exc, ssl.SSLError):
        return crypto_tls_error(exc)
    if raw and exc.errno is not None:
        return errno_text(exc.errno)
    return stream_error(op, stream.addresses(), exc.errno)


def _go_int(func: str, value: bytes, bits: int) -> int | str:
    """strconv.ParseInt(value, 10, bits) (`func` names the caller, "strconv.ParseInt" or
    "strconv.Atoi"): the number, or the error's text."""
    if not _GO_INT.fullmatch(value):
        return f"{func}: parsing {go_quote(value)}: invalid syntax"
    number = int(value)
    if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
        return f"{func}: parsing {go_quote(value)}: value out of range"
    return number


def _decode_grpc_message(raw: bytes) -> str:
    """grpc-go's decodeGrpcMessage: %XX escapes decoded, anything else kept as it is."""
    if b"%" not in raw:
        return raw.decode("utf-8", errors="replace")
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        if raw[i] == 0x25 and i + 3 <= n and _is_hex(raw[i + 1 : i + 3]):
            out.append(int(raw[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", errors="replace")


def _is_hex(pair: bytes) -> bool:
    return len(pair) == 2 and all(c in b"0123456789abcdefABCDEF" for c in pair)


# -- one connection -------------------------------------------------------------------------------


class _Conn:
    """One HTTP/2 connection's frames, over a `lean_conn.Stream`.

    What the connection owes the peer (SETTINGS and PING acknowledgements, window updates) is
    queued with `reply` and written before the next wait for the peer, as grpc-go's writer
    batches its control frames: an answer that came whole with the server's own SETTINGS or
    PING costs no extra write, and the connection closes right after it.
    """

    __slots__ = ("_buf", "_decoder", "_owed", "_unacked", "raw", "stream")

    def __init__(self, stream: Stream, raw: bool) -> None:
        self.stream = stream
        # grpc-go reads this connection with its raw reader (`GrpcGo.raw_reads`)
        self.raw = raw
        self._buf = bytearray()
        self._decoder: object | None = None
        self._unacked = 0
        self._owed = b""

    def reply(self, frames: bytes) -> None:
        self._owed += frames

    async def frame(self) -> tuple[int, int, int, bytes]:
        """The next frame: (type, flags, stream id, payload). EOFError when the connection
        ends, ValueError for a frame larger than this client allows; `str()` of either is
        x/net's Framer.ReadFrame error."""
        buf = self._buf
        while True:
            if len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if length > _MAX_FRAME:
                    raise ValueError("http2: frame too large")
                end = 9 + length
                if len(buf) >= end:
                    kind, flags = buf[3], buf[4]
                    stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                    payload = bytes(buf[9:end])
                    del buf[:end]
                    return kind, flags, stream, payload
            if self._owed:
                owed, self._owed = self._owed, b""
                await self.stream.send(owed)
            data = await self.stream.recv()
            if not data:
                # io.ReadFull of the header, then of the payload: nothing of either read is
                # EOF, a part of it unexpected EOF
                raise EOFError("EOF" if len(buf) in (0, 9) else "unexpected EOF")
            buf += data

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        if self._decoder is None:
            import hpack

            self._decoder = hpack.Decoder()
        return self._decoder.decode(block, raw=True)  # type: ignore[attr-defined, no-any-return]

    def consumed(self, size: int, stream: int) -> None:
        """`size` bytes of DATA read: the window is given back once a quarter of it is used."""
        self._unacked += size
        if self._unacked >= _WINDOW_REFILL:
            increment = struct.pack(">I", self._unacked)
            self._unacked = 0
            self.reply(_frame(_WINDOW_UPDATE, 0, 0, increment))
            self.reply(_frame(_WINDOW_UPDATE, 0, stream, increment))


async def _within(step: Awaitable[_T], until: float | None, failure: str) -> _T:
    """`step` within grpc-go's connect deadline, loop time `until` (None: the probe's deadline
    comes first); `_NotReady(failure)` once it has passed."""
    if until is None:
        return await step
    try:
        async with asyncio.timeout_at(until):
            return await step
    except TimeoutError:
        raise _NotReady(failure) from None


async def _dial(
    host: str,
    port: int,
    tls: bool,
    deadline: Deadline,
    loop: asyncio.AbstractEventLoop,
    client: GrpcGo,
) -> _Conn:
    """One connection made READY (http2_client.newHTTP2Client): TCP, TLS when asked, the
    prefaces. `_NotReady` when it fails; TimeoutError when the probe's deadline ran out first
    (its cancellation is due)."""
    assert deadline.when is not None
    remaining = max(deadline.when - loop.time(), 0.0)
    # grpc-go's own connect deadline matters only where the probe's is further away
    until = loop.time() + MIN_CONNECT_TIMEOUT if remaining > MIN_CONNECT_TIMEOUT else None
    try:
        sock = await tcp.dial(
            host, port, min(remaining, MIN_CONNECT_TIMEOUT), loop, bounded=until is None
        )
    except tcp.DialError as exc:
        if exc.timed_out and until is None:
            raise TimeoutError from None
        raise _NotReady(f"transport: Error while dialing: {exc}") from None
    stream = Stream(sock, loop)
    try:
        if tls:
            await _within(
                _handshake(stream, host),
                until,
                "transport: authentication handshake failed: context deadline exceeded",
            )
        raw = client.raw_reads and not tls
        if until is None:
            return await _prefaces(stream, raw)
        # the connection is closed under a reader still waiting for the server's preface
        op = "raw-read" if raw else "read"
        closed = op_error(op, stream.addresses(), "use of closed network connection")
        return await _within(
            _prefaces(stream, raw), until, f"error reading server preface: {closed}"
        )
    except BaseException:
        stream.close()
        raise


async def _handshake(stream: Stream, host: str) -> None:
    """grpc-go's TLS credentials' ClientHandshake: Go sends SNI only for names, never for an IP
    address (nor does Python's ssl), and refuses a server that did not select h2 by ALPN."""
    failed = "transport: authentication handshake failed: "
    try:
        await stream.start_tls(host, _tls_context())
    except OSError as exc:
        raise _NotReady(failed + _io_error("read", exc, stream)) from None
    if stream.selected_alpn() != "h2":
        raise _NotReady(failed + _ALPN_MISSING)


async def _prefaces(stream: Stream, raw: bool) -> _Conn:
    """The client's preface and SETTINGS out, the server's first frame in: it must be a
    SETTINGS frame (http2_client.readServerPreface). `raw`: grpc-go reads the connection
    with its raw reader."""
    try:
        await stream.send(_CLIENT_PREFACE)
    except OSError as exc:
        detail = _io_error("write", exc, stream)
        raise _NotReady(f"transport: failed to write client preface: {detail}") from None
    conn = _Conn(stream, raw)
    try:
        kind, _, _, _ = await conn.frame()
    except (EOFError, ValueError) as exc:
        raise _NotReady(f"error reading server preface: {exc}") from None
    except OSError as exc:
        detail = _io_error("read", exc, stream, raw)
        raise _NotReady(f"error reading server preface: {detail}") from None
    if kind != _SETTINGS:
        name = _FRAME_TYPE_NAMES.get(kind, "*http2.UnknownFrame")
        raise _NotReady(f"initial http2 frame from server is not a settings frame: {name}")
    return conn


def _header_block(kind: int, flags: int, payload: bytes) -> bytes:
    """A HEADERS frame's field block fragment, its padding and priority taken off."""
    start, end = 0, len(payload)
    if flags & _PADDED:
        if not payload:
            raise _RpcError(_INTERNAL, "http2: frame with padding but no pad length")
        start, end = 1, end - payload[0]
    if kind == _HEADERS and flags & _PRIORITY:
        start += 5
    if end < start:
        raise _RpcError(_INTERNAL, "http2: pad length too large")
    return payload[start:end]


@dataclass(slots=True)
class _Head:
    """One header block as http2_client.operateHeaders reads it."""

    # the status of an answer that is no gRPC answer (its HTTP status, its content type)
    refused: _RpcError | None = None
    # a 1xx head, passed over
    informational: bool = False
    # the trailers' grpc-status and grpc-message
    code: int = _UNKNOWN
    message: str = ""


def _grpc_content_type(value: bytes) -> bool:
    """grpcutil.ContentSubtype's test: application/grpc, or with a `+` or `;` suffix."""
    return value == b"application/grpc" or value.startswith(
        (b"application/grpc+", b"application/grpc;")
    )


def _operate_headers(
    fields: list[tuple[bytes, bytes]], initial: bool, ended: bool, client: GrpcGo
) -> _Head:
    """http2_client.operateHeaders: what one header block says. `_RpcError` for a block that
    closes the stream at once (a malformed status)."""
    head = _Head()
    is_grpc = not initial
    content_type_error = "malformed header: missing HTTP content-type"
    # grpc-go 1.79 reads :status only for an answer that is no gRPC answer; before, as it comes
    raw_status: bytes | None = None
    http_status: int | None = None
    http_error = ""
    if initial and not client.content_type_decides:
        http_error = "malformed header: missing HTTP status"
    for name, value in fields:
        if name == b"content-type":
            if _grpc_content_type(value):
                content_type_error = ""
                is_grpc = True
            else:
                content_type_error = (
                    f"transport: received unexpected content-type {go_quote(value)}"
                )
        elif name == b"grpc-status":
            code = 0 if value == b"0" else _go_int("strconv.ParseInt", value, 32)
            if isinstance(code, str):
                raise _RpcError(
                    _UNKNOWN if client.content_type_decides else _INTERNAL,
                    f"transport: malformed grpc-status: {code}",
                )
            head.code = code & 0xFFFFFFFF
        elif name == b"grpc-message":
            head.message = _decode_grpc_message(value)
        elif name == b":status":
            if client.content_type_decides:
                raw_status = value
            elif value == b"200":
                http_error, http_status = "", 200
            else:
                http_status = _parsed_status("strconv.ParseInt", value, 32)
                http_error = _unexpected_status(http_status)
    if client.content_type_decides:
        if is_grpc:
            return head
        if raw_status is None:
            http_error = "malformed header: missing HTTP status"
        else:
            http_status = _parsed_status("strconv.Atoi", raw_status, 64)
            if 100 <= http_status < 200:
                if ended:
                    raise _RpcError(
                        _INTERNAL,
                        f"protocol error: informational header with status code {http_status} "
                        "must not have END_STREAM set",
                    )
                head.informational = True
                return head
            http_error = _unexpected_status(http_status)
    elif is_grpc and not http_error:
        return head
    code = _INTERNAL if http_status is None else _HTTP_CODES.get(http_status, _UNKNOWN)
    head.refused = _RpcError(code, "; ".join(e for e in (http_error, content_type_error) if e))
    return head


def _parsed_status(func: str, value: bytes, bits: int) -> int:
    status = _go_int(func, value, bits)
    if isinstance(status, str):
        raise _RpcError(_INTERNAL, f"transport: malformed http-status: {status}")
    return status


def _unexpected_status(status: int) -> str:
    return f"unexpected HTTP status code received from server: {status} ({_status_text(status)})"


def _status_text(status: int) -> str:
    """net/http's StatusText: "" for a status it has no words for."""
    if status in _GO_STATUS_TEXT:
        return _GO_STATUS_TEXT[status]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _with_body(refused: _RpcError, body: bytes) -> _RpcError:
    """grpc-go 1.82's finalizeNonGRPCStatus: the status with the body read, `%q`-quoted."""
    return _RpcError(refused.code, f"{refused.message}\ndata: {go_quote(body)}")


def _serving_status(message: bytes) -> int:
    """HealthCheckResponse.status from one length-prefixed gRPC message (protobuf wire format;
    fields other than 1 skipped)."""
    if message[0] != 0:
        raise _RpcError(_INTERNAL, "grpc: compressed flag set with identity or empty encoding")
    data = message[5:]
    status = 0
    i, n = 0, len(data)
    try:
        while i < n:
            key, i = _read_varint(data, i)
            field, wire = key >> 3, key & 7
            if wire == 0:
                value, i = _read_varint(data, i)
                if field == 1:
                    status = value
            elif wire == 1:
                i += 8
            elif wire == 2:
                size, i = _read_varint(data, i)
                i += size
            elif wire == 5:
                i += 4
            else:
                raise IndexError
            if i > n or field == 0:
                raise IndexError
    except IndexError:
        raise _RpcError(
            _INTERNAL,
            "grpc: failed to unmarshal the received message: "
            "proto: cannot parse invalid wire-format data",
        ) from None
    # an enum is an int32: a negative one comes as ten bytes of varint
    status &= 0xFFFFFFFF
    return status - (1 << 32) if status >= 1 << 31 else status


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, i
        shift += 7
        if shift >= 70:
            raise IndexError


def _message_size(messages: bytearray, start: int) -> int | None:
    """The length prefix of the message at `start` (None until its five bytes are in);
    recvMsg refuses one over the limit as soon as it reads it."""
    if len(messages) < start + 5:
        return None
    size = int.from_bytes(messages[start + 1 : start + 5], "big")
    if size > _MAX_MESSAGE:
        raise _RpcError(
            _RESOURCE_EXHAUSTED,
            f"grpc: received message larger than max ({size} vs. {_MAX_MESSAGE})",
        )
    return size


async def _check(conn: _Conn, request: bytes, sid: int, client: GrpcGo) -> int:
    """The Check call on stream `sid` of a READY connection: the serving status, `_RpcError`,
    or `_Unprocessed` for a stream the server did not process."""
    try:
        await conn.stream.send(request)
        return await _answer(conn, sid, client)
    except OSError as exc:
        # the connection broke while the request was written or the answer read
        detail = _io_error("read", exc, conn.stream, conn.raw)
        raise _RpcError(_UNAVAILABLE, f"error reading from server: {detail}") from None


async def _answer(conn: _Conn, sid: int, client: GrpcGo) -> int:
    """The answer on stream `sid`, read as grpc-go's reader and recvMsg read it."""
    headers_seen = False
    messages = bytearray()
    status: int | None = None
    # grpc-go 1.82: a non-gRPC answer whose body is read for its status
    refused: _RpcError | None = None
    body = b""
    while True:
        try:
            kind, flags, stream, payload = await conn.frame()
        except (EOFError, ValueError) as exc:
            raise _RpcError(_UNAVAILABLE, f"error reading from server: {exc}") from None
        if stream == 0:
            if kind == _SETTINGS and not flags & _ACK:
                conn.reply(_SETTINGS_ACK)
            elif kind == _PING and not flags & _ACK:
                conn.reply(_frame(_PING, _ACK, 0, payload))
            elif kind == _GOAWAY and int.from_bytes(payload[:4], "big") & 0x7FFFFFFF < sid:
                # handleGoAway: a stream above the last one the server processes is unprocessed
                # and closed with errStreamDrain
                drain = _RpcError(_UNAVAILABLE, "the connection is draining")
                raise _Unprocessed(drain, drained=True)
            continue
        if stream != sid:
            continue
        if kind == _RST_STREAM:
            value = int.from_bytes(payload[:4], "big")
            name, code = _RST_CODES.get(value, (f"unknown error code 0x{value:x}", _UNKNOWN))
            error = _RpcError(code, f"stream terminated by RST_STREAM with error code: {name}")
            if value == 0x7:
                raise _Unprocessed(error, drained=False)
            raise error
        if kind == _DATA:
            start, end = 0, len(payload)
            if flags & _PADDED and payload:
                start, end = 1, end - payload[0]
            conn.consumed(len(payload), sid)
            if refused is not None:
                body += payload[start:end][: _NON_GRPC_BODY - len(body)]
                if len(body) >= _NON_GRPC_BODY or flags & _END_STREAM:
                    raise _with_body(refused, body)
                continue
            messages += payload[start:end]
            status = _messages_read(messages, status, client)
            if flags & _END_STREAM:
                raise _RpcError(_INTERNAL, "server closed the stream without sending trailers")
            continue
        if kind != _HEADERS:
            continue
        block = _header_block(kind, flags, payload)
        while not flags & _END_HEADERS:
            try:
                next_kind, next_flags, next_stream, fragment = await conn.frame()
            except (EOFError, ValueError):
                raise _RpcError(_UNAVAILABLE, "error reading from server: EOF") from None
            if next_kind != _CONTINUATION or next_stream != sid:
                raise _RpcError(_INTERNAL, "http2: expected CONTINUATION frame")
            block += fragment
            flags = (flags & _END_STREAM) | next_flags
            if len(block) > _MAX_HEADER_BLOCK:
                raise _RpcError(_INTERNAL, "header list size to send violates the maximum size")
        try:
            fields = conn.decode(block)
        except Exception as exc:  # hpack's errors: a block this client cannot read
            raise _RpcError(_INTERNAL, f"transport: decoding header block: {exc}") from None
        ended = bool(flags & _END_STREAM)
        if refused is not None:
            # a trailing header block ends a non-gRPC answer's body
            if ended:
                raise _with_body(refused, body)
            continue
        if headers_seen and not ended:
            raise _RpcError(_INTERNAL, "a HEADERS frame cannot appear in the middle of a stream")
        head = _operate_headers(fields, not headers_seen, ended, client)
        if head.informational:
            continue
        if head.refused is not None:
            if client.non_grpc_body and not ended:
                refused = head.refused
                continue
            raise head.refused
        if not ended:
            headers_seen = True
            continue
        # the trailers, or a trailers-only answer: recvMsg's end of the stream
        if head.code != 0:
            raise _RpcError(head.code, head.message)
        if status is not None:
            return status
        if not messages:
            if client.content_type_decides:
                raise _RpcError(
                    _INTERNAL,
                    "cardinality violation: received no response message from "
                    "non-server-streaming RPC",
                )
            # grpc-go before 1.79 hands the caller recv's io.EOF as it is
            raise _RpcError(None, "EOF")
        raise _RpcError(_INTERNAL, "unexpected EOF")


def _messages_read(messages: bytearray, status: int | None, client: GrpcGo) -> int | None:
    """The serving status once the response message is whole (decoded then, as recvMsg does);
    an error for a second message, which a unary call refuses once it is read."""
    size = _message_size(messages, 0)
    if size is None or len(messages) < 5 + size:
        return status
    if status is None:
        status = _serving_status(bytes(messages[: 5 + size]))
    if len(messages) == 5 + size:
        return status
    second = _message_size(messages, 5 + size)
    if second is not None and len(messages) >= 10 + size + second:
        if client.content_type_decides:
            raise _RpcError(
                _INTERNAL,
                "cardinality violation: expected <EOF> for non server-streaming RPCs, "
                "but received another message",
            )
        raise _RpcError(
            _UNKNOWN, "grpc: client streaming protocol violation: get <nil>, want <EOF>"
        )
    return status


# -- the attempt ----------------------------------------------------------------------------------


async def _connect(
    host: str,
    port: int,
    tls: bool,
    deadline: Deadline,
    loop: asyncio.AbstractEventLoop,
    client: GrpcGo,
) -> _Conn:
    """The connection the Check goes out on. 1.33-1.37 (WithBlock): tried again after the
    backoff until one is READY. 1.38: one try, whose failure fails the fail-fast Check."""
    retries = 0
    while True:
        try:
            return await _dial(host, port, tls, deadline, loop, client)
        except _NotReady as exc:
            if client.new_client:
                raise _RpcError(_UNAVAILABLE, str(exc)) from None
        await asyncio.sleep(_backoff(retries))
        retries += 1


async def _call(
    conn: _Conn,
    service: str,
    agent_block: bytes,
    tls: bool,
    host: str,
    port: int,
    deadline: Deadline,
    loop: asyncio.AbstractEventLoop,
    client: GrpcGo,
) -> int:
    """The Check's serving status, the Check sent once more when the server did not process
    it (stream.go shouldRetry's transparent retry of a first attempt): on the next stream, or
    after a GOAWAY on a new connection, whose failure fails the call (it is fail-fast). `conn`
    stays the caller's to close; a connection made here is closed here."""
    sid = _STREAM
    opening = _SETTINGS_ACK
    first = True
    redialled: _Conn | None = None
    try:
        while True:
            assert deadline.when is not None
            left = _grpc_timeout(deadline.when - loop.time())
            request = (
                opening
                + _frame(_HEADERS, _END_HEADERS, sid, agent_block + _literal(b"grpc-timeout", left))
                + _request_message(service, sid)
            )
            try:
                return await _check(redialled or conn, request, sid, client)
            except _Unprocessed as exc:
                if not first:
                    raise exc.error from None
                first = False
                if not exc.drained:
                    sid, opening = sid + 2, b""
                    continue
            conn.stream.close()
            try:
                redialled = await _dial(host, port, tls, deadline, loop, client)
            except _NotReady as exc:
                raise _RpcError(_UNAVAILABLE, str(exc)) from None
            sid, opening = _STREAM, _SETTINGS_ACK
    finally:
        if redialled is not None:
            redialled.stream.close()


async def probe(
    host: str,
    port: int,
    service: str = "",
    timeout: float = 1.0,
    *,
    kube_version: str = DEFAULT_KUBE_VERSION,
    tls: bool = False,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Attempt:
    """One grpc attempt, as `probetui.probe.grpc.probe` makes it (same arguments, same
    Attempt), played as the kubelet of `kube_version` makes it. `loop`: the running loop, when
    the caller has it at hand."""
    client = client_for(kube_version)
    addr = join_host_port(host, port)
    started_at = time.time()
    start = time.monotonic()
    loop = loop or asyncio.get_running_loop()
    deadline = Deadline(loop, timeout)
    # from 1.38 there is no dial of its own to time out: every timeout is the Check's
    ready = client.new_client
    conn: _Conn | None = None
    result, output, timed_out = Result.FAILURE, "", False
    try:
        try:
            conn = await _connect(host, port, tls, deadline, loop, client)
            ready = True
            agent = f"{user_agent(kube_version)} grpc-go/{client.version}"
            agent_block = _request_block("https" if tls else "http", addr, agent)
            status = await _call(
                conn, service, agent_block, tls, host, port, deadline, loop, client
            )
        finally:
            expired = deadline.disarm()
    except (asyncio.CancelledError, TimeoutError) as exc:
        if isinstance(exc, asyncio.CancelledError) and not expired:
            raise
        timed_out = True
        output = grpc_rpc_timeout(timeout) if ready else connect_timeout_text(addr, timeout)
    except _RpcError as exc:
        timed_out = exc.code == _DEADLINE_EXCEEDED
        output = _failure_text(exc, addr, timeout, client)
    else:
        if status == _SERVING:
            result, output = Result.SUCCESS, GRPC_HEALTHY
        else:
            output = grpc_unhealthy(_STATUS_NAMES.get(status, str(status)))
    finally:
        if conn is not None:
            conn.stream.close()
    return Attempt(
        handler="grpc",
        target=addr,
        result=result,
        output=output,
        latency=time.monotonic() - start,
        started_at=started_at,
        timed_out=timed_out,
    )


__all__ = ["GrpcGo", "client_for", "grpc_go_agent", "probe"]
