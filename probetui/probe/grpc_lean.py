"""Run the gRPC health handler on one HTTP/2 connection over a raw asyncio socket.

It is `pkg/probe/grpc` (docs/kubelet-behaviour.md §15.1-15.2), lean.

The same attempt as the tests' oracle on grpcio (`tests/probe/grpc_oracle.py`) at a fraction of
the CPU and memory. grpcio builds a channel, a resolver, a subchannel and a completion queue for each
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

What differs by release is `probetui.probe.grpc_answer`'s `GrpcGo`: the kubelet's dial (1.38)
and the grpc-go it vendors (1.68.1 in 1.33 to 1.85.0 in 1.38; docs/kubelet-versions.md V15).

Response header blocks are decoded by `hpack` (Huffman codes, the dynamic table); the request's
are written here as literals, which any HPACK decoder reads.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import struct
import time
from collections.abc import Awaitable
from functools import lru_cache
from typing import TypeVar

from probetui.probe import tcp
from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result, user_agent
from probetui.probe.gotext import (
    GRPC_HEALTHY,
    crypto_tls_error,
    errno_text,
    go_quote,
    grpc_rpc_timeout,
    grpc_unhealthy,
    join_host_port,
    op_error,
    stream_error,
)
from probetui.probe.gotext import grpc_connect_timeout as connect_timeout_text
from probetui.probe.grpc_answer import (
    DEADLINE_EXCEEDED,
    INTERNAL,
    NON_GRPC_BODY,
    RST_CODES,
    SERVING,
    STATUS_NAMES,
    UNAVAILABLE,
    UNKNOWN,
    GrpcGo,
    RpcError,
    client_for,
    failure_text,
    grpc_go_agent,
    messages_read,
    operate_headers,
    with_body,
)
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


# A new connection's HPACK decoder holds what the blocks it decoded put there, so the same
# blocks in the same order decode the same way on every connection: a steady server's answer is
# decoded once, not once an attempt (benchmarks.agents, whose sidecars answer gRPC, guards it).
# Bounded: entries and the bytes of each key.
_DECODED: dict[tuple[bytes, ...], tuple[tuple[bytes, bytes], ...]] = {}
_DECODED_MAX = 512
_DECODED_BYTES = 2048


# a frame's header: its 24-bit length and type as one integer, its flags, its stream ID
_FRAME_HEAD = struct.Struct(">IBI")


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


# -- errors ---------------------------------------------------------------------------------------


class _NotReady(Exception):
    """Signals that the connection failed before it was READY. `str()` is the error grpc-go's picker
    gives a fail-fast RPC then: the transport's ConnectionError,
    `connection error: desc = "..."`."""

    def __init__(self, desc: str) -> None:
        super().__init__(f"connection error: desc = {go_quote(desc)}")


class _Unprocessed(Exception):
    """Signals that the server did not process the stream: an RST_STREAM REFUSED_STREAM, or a
    GOAWAY below the stream's ID (`drained`: the connection takes no new streams)."""

    def __init__(self, error: RpcError, *, drained: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.drained = drained


def _io_error(op: str, exc: OSError, stream: Stream, raw: bool = False) -> str:
    """Go's text for a failed read or write on the connection (TLS's own words for a TLS
    error). `raw`: a read by grpc-go's raw reader (`GrpcGo.raw_reads`), whose error is the
    errno alone."""
    if isinstance(exc, ssl.SSLError):
        return crypto_tls_error(exc)
    if raw and exc.errno is not None:
        return errno_text(exc.errno)
    return stream_error(op, stream.addresses(), exc.errno)


# -- one connection -------------------------------------------------------------------------------


class _Conn:
    """Handles one HTTP/2 connection's frames, over a `lean_conn.Stream`.

    What the connection owes the peer (SETTINGS and PING acknowledgements, window updates) is
    queued with `reply` and written before the next wait for the peer, as grpc-go's writer
    batches its control frames: an answer that came whole with the server's own SETTINGS or
    PING costs no extra write, and the connection closes right after it.
    """

    __slots__ = ("_blocks", "_buf", "_decoder", "_owed", "_pos", "_unacked", "raw", "stream")

    def __init__(self, stream: Stream, raw: bool) -> None:
        self.stream = stream
        # grpc-go reads this connection with its raw reader (`GrpcGo.raw_reads`)
        self.raw = raw
        # what was read and not yet taken as frames: `_buf` from `_pos` on
        self._buf = b""
        self._pos = 0
        self._decoder: object | None = None
        # the header blocks decoded so far, while they stay within _DECODED_BYTES
        self._blocks: tuple[bytes, ...] | None = ()
        self._unacked = 0
        self._owed = b""

    def reply(self, frames: bytes) -> None:
        self._owed += frames

    def next_frame(self) -> tuple[int, int, int, bytes] | None:
        """The next frame already read, as `frame` gives it; None when it has not all come.

        Every frame a read brought is taken in one synchronous pass, without a coroutine per
        frame (benchmarks.engine --handler grpc guards it)."""
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 9:
            return None
        head, flags, stream = _FRAME_HEAD.unpack_from(buf, pos)
        length = head >> 8
        if length > _MAX_FRAME:
            raise ValueError("http2: frame too large")
        start = pos + 9
        end = start + length
        if len(buf) < end:
            return None
        self._pos = end
        return head & 0xFF, flags, stream & 0x7FFFFFFF, buf[start:end]

    async def frame(self) -> tuple[int, int, int, bytes]:
        """The next frame: (type, flags, stream id, payload). EOFError when the connection
        ends, ValueError for a frame larger than this client allows; `str()` of either is
        x/net's Framer.ReadFrame error."""
        while True:
            frame = self.next_frame()
            if frame is not None:
                return frame
            if self._owed:
                owed, self._owed = self._owed, b""
                await self.stream.send(owed)
            data = await self.stream.recv()
            left = len(self._buf) - self._pos
            if not data:
                # io.ReadFull of the header, then of the payload: nothing of either read is
                # EOF, a part of it unexpected EOF
                raise EOFError("EOF" if left in (0, 9) else "unexpected EOF")
            self._buf = self._buf[self._pos :] + data if left else data
            self._pos = 0

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        """The fields of a header block, as this connection's HPACK decoder reads them."""
        blocks = None if self._blocks is None else (*self._blocks, block)
        if self._decoder is None:
            known = _DECODED.get(blocks)  # type: ignore[arg-type]
            if known is not None:
                self._blocks = blocks
                return list(known)
            import hpack

            self._decoder = hpack.Decoder()
            for earlier in self._blocks or ():
                self._decoder.decode(earlier, raw=True)  # type: ignore[attr-defined]
        fields: list[tuple[bytes, bytes]] = self._decoder.decode(block, raw=True)  # type: ignore[attr-defined]
        if blocks is not None and sum(map(len, blocks)) <= _DECODED_BYTES:
            self._blocks = blocks
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            _DECODED[blocks] = tuple(fields)
        else:
            self._blocks = None  # past the bound: this connection's blocks are not kept
        return fields

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
        sock, peer = await tcp.dial_peer(
            host, port, min(remaining, MIN_CONNECT_TIMEOUT), loop, bounded=until is None
        )
    except tcp.DialError as exc:
        if exc.timed_out and until is None:
            raise TimeoutError from None
        raise _NotReady(f"transport: Error while dialing: {exc}") from None
    stream = Stream(sock, loop, peer)
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
            raise RpcError(INTERNAL, "http2: frame with padding but no pad length")
        start, end = 1, end - payload[0]
    if kind == _HEADERS and flags & _PRIORITY:
        start += 5
    if end < start:
        raise RpcError(INTERNAL, "http2: pad length too large")
    return payload[start:end]


async def _answer(conn: _Conn, sid: int, client: GrpcGo) -> int:
    """The answer on stream `sid`, read as grpc-go's reader and recvMsg read it."""
    headers_seen = False
    messages = bytearray()
    status: int | None = None
    # grpc-go 1.82: a non-gRPC answer whose body is read for its status
    refused: RpcError | None = None
    body = b""
    while True:
        try:
            frame = conn.next_frame()
            kind, flags, stream, payload = frame if frame is not None else await conn.frame()
        except (EOFError, ValueError) as exc:
            raise RpcError(UNAVAILABLE, f"error reading from server: {exc}") from None
        if stream == 0:
            if kind == _SETTINGS and not flags & _ACK:
                conn.reply(_SETTINGS_ACK)
            elif kind == _PING and not flags & _ACK:
                conn.reply(_frame(_PING, _ACK, 0, payload))
            elif kind == _GOAWAY and int.from_bytes(payload[:4], "big") & 0x7FFFFFFF < sid:
                # handleGoAway: a stream above the last one the server processes is unprocessed
                # and closed with errStreamDrain
                drain = RpcError(UNAVAILABLE, "the connection is draining")
                raise _Unprocessed(drain, drained=True)
            continue
        if stream != sid:
            continue
        if kind == _RST_STREAM:
            value = int.from_bytes(payload[:4], "big")
            name, code = RST_CODES.get(value, (f"unknown error code 0x{value:x}", UNKNOWN))
            error = RpcError(code, f"stream terminated by RST_STREAM with error code: {name}")
            if value == 0x7:
                raise _Unprocessed(error, drained=False)
            raise error
        if kind == _DATA:
            start, end = 0, len(payload)
            if flags & _PADDED and payload:
                start, end = 1, end - payload[0]
            conn.consumed(len(payload), sid)
            if refused is not None:
                body += payload[start:end][: NON_GRPC_BODY - len(body)]
                if len(body) >= NON_GRPC_BODY or flags & _END_STREAM:
                    raise with_body(refused, body)
                continue
            messages += payload[start:end]
            status = messages_read(messages, status, client)
            if flags & _END_STREAM:
                raise RpcError(INTERNAL, "server closed the stream without sending trailers")
            continue
        if kind != _HEADERS:
            continue
        block = _header_block(kind, flags, payload)
        while not flags & _END_HEADERS:
            try:
                next_kind, next_flags, next_stream, fragment = await conn.frame()
            except (EOFError, ValueError):
                raise RpcError(UNAVAILABLE, "error reading from server: EOF") from None
            if next_kind != _CONTINUATION or next_stream != sid:
                raise RpcError(INTERNAL, "http2: expected CONTINUATION frame")
            block += fragment
            flags = (flags & _END_STREAM) | next_flags
            if len(block) > _MAX_HEADER_BLOCK:
                raise RpcError(INTERNAL, "header list size to send violates the maximum size")
        try:
            fields = conn.decode(block)
        except Exception as exc:  # hpack's errors: a block this client cannot read
            raise RpcError(INTERNAL, f"transport: decoding header block: {exc}") from None
        ended = bool(flags & _END_STREAM)
        if refused is not None:
            # a trailing header block ends a non-gRPC answer's body
            if ended:
                raise with_body(refused, body)
            continue
        if headers_seen and not ended:
            raise RpcError(INTERNAL, "a HEADERS frame cannot appear in the middle of a stream")
        head = operate_headers(fields, not headers_seen, ended, client)
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
            raise RpcError(head.code, head.message)
        if status is not None:
            return status
        if not messages:
            if client.content_type_decides:
                raise RpcError(
                    INTERNAL,
                    "cardinality violation: received no response message from "
                    "non-server-streaming RPC",
                )
            # grpc-go before 1.79 hands the caller recv's io.EOF as it is
            raise RpcError(None, "EOF")
        raise RpcError(INTERNAL, "unexpected EOF")


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
                raise RpcError(UNAVAILABLE, str(exc)) from None
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
            # the Check on stream `sid` of a READY connection
            ready = redialled or conn
            try:
                try:
                    await ready.stream.send(request)
                    return await _answer(ready, sid, client)
                except OSError as exc:
                    # the connection broke while the request was written or the answer read
                    detail = _io_error("read", exc, ready.stream, ready.raw)
                    raise RpcError(UNAVAILABLE, f"error reading from server: {detail}") from None
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
                raise RpcError(UNAVAILABLE, str(exc)) from None
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
    """Run one grpc attempt as the kubelet of `kube_version` makes it (the tests' oracle takes
    the same arguments and gives the same Attempt). `loop`: the running loop, when the caller
    has it at hand."""
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
    except RpcError as exc:
        timed_out = exc.code == DEADLINE_EXCEEDED
        output = failure_text(exc, addr, timeout, client)
    else:
        if status == SERVING:
            result, output = Result.SUCCESS, GRPC_HEALTHY
        else:
            output = grpc_unhealthy(STATUS_NAMES.get(status, str(status)))
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
