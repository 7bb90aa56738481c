"""Run the gRPC health handler on one HTTP/2 connection over a raw asyncio socket.

It is `pkg/probe/grpc` (docs/kubelet-behaviour.md §15.1-15.2), lean.

The same attempt as `probetui.probe.grpc` (the reference, on grpcio) at a fraction of the CPU and
memory. grpcio builds a channel, a resolver, a subchannel and a completion queue for each
attempt, and starts and stops gRPC core's threads whenever its last channel closes, which a
connection per attempt makes every time; a health check needs a socket, the HTTP/2 preface, one
HEADERS and one DATA frame out, and a few frames back.

What grpc-go does for the kubelet, done here:

- the blocking dial (`grpc.WithBlock`): the ProbeDialer's connect (`probetui.probe.tcp`), TLS
  for `mode: TLS` (InsecureSkipVerify, TLS 1.2 or later, ALPN `h2` required, SNI for names
  only), the client preface and SETTINGS, then the server's first frame, which must be its
  SETTINGS: the connection is READY only then. A connection that fails before READY is tried
  again after grpc-go's connection backoff (1 s, times 1.6 each time, jitter 0.2) until the
  deadline, whose end is the connect-timeout text;
- the Check call on stream 1: grpc-go's request headers in its order (`grpc-timeout` the time
  left), the request message, and the response read as grpc-go's HTTP/2 client reads it: the
  HTTP status and content type checked, `grpc-status` and the percent-decoded `grpc-message` of
  the trailers (or a trailers-only answer), RST_STREAM codes mapped to gRPC codes, one
  length-prefixed message of at most 4 MiB; every RPC error as grpc-go's `status.Error` text;
- one deadline over both, as the kubelet's single context.

Response header blocks are decoded by `hpack` (Huffman codes, the dynamic table); the request's
are written here as literals, which any HPACK decoder reads.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import struct
import time
from functools import lru_cache
from http import HTTPStatus

from probetui.probe import tcp
from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result, user_agent
from probetui.probe.gotext import (
    GRPC_HEALTHY,
    go_quote,
    grpc_rpc_error,
    grpc_rpc_timeout,
    grpc_unhealthy,
    grpc_unimplemented,
    join_host_port,
    stream_error,
)
from probetui.probe.gotext import grpc_connect_timeout as connect_timeout_text
from probetui.probe.lean_conn import Deadline, Stream

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
def _request_message(service: str) -> bytes:
    """HealthCheckRequest{service} as one gRPC length-prefixed message, in a DATA frame that
    ends the stream."""
    raw = service.encode()
    body = b"\x0a" + _varint(len(raw)) + raw if raw else b""
    return _frame(_DATA, _END_STREAM, _STREAM, b"\x00" + struct.pack(">I", len(body)) + body)


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
    """The connection failed before it was READY: grpc-go tries again after its backoff."""


class _RpcError(Exception):
    """The Check call failed with a gRPC status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _code_name(code: int) -> str:
    return _CODE_NAMES[code] if 0 <= code < len(_CODE_NAMES) else f"Code({code})"


def _rpc_error_text(error: _RpcError, timeout: float) -> str:
    if error.code == _UNIMPLEMENTED:
        return grpc_unimplemented(error.message)
    if error.code == _DEADLINE_EXCEEDED:
        return grpc_rpc_timeout(timeout)
    # grpc-go's status error: `rpc error: code = <Code> desc = <message>`
    return grpc_rpc_error(f"rpc error: code = {_code_name(error.code)} desc = {error.message}")


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

    __slots__ = ("_buf", "_decoder", "_owed", "_unacked", "stream")

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._buf = bytearray()
        self._decoder: object | None = None
        self._unacked = 0
        self._owed = b""

    def reply(self, frames: bytes) -> None:
        self._owed += frames

    async def frame(self) -> tuple[int, int, int, bytes]:
        """The next frame: (type, flags, stream id, payload). EOFError when the connection
        ends, ValueError for a frame larger than this client allows."""
        buf = self._buf
        while True:
            if len(buf) >= 9:
                length = int.from_bytes(buf[:3], "big")
                if length > _MAX_FRAME:
                    raise ValueError(f"http2: frame too large ({length} bytes)")
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
                raise EOFError
            buf += data

    def decode(self, block: bytes) -> list[tuple[bytes, bytes]]:
        if self._decoder is None:
            import hpack

            self._decoder = hpack.Decoder()
        return self._decoder.decode(block, raw=True)  # type: ignore[attr-defined, no-any-return]

    def consumed(self, size: int) -> None:
        """`size` bytes of DATA read: the window is given back once a quarter of it is used."""
        self._unacked += size
        if self._unacked >= _WINDOW_REFILL:
            increment = struct.pack(">I", self._unacked)
            self._unacked = 0
            self.reply(_frame(_WINDOW_UPDATE, 0, 0, increment))
            self.reply(_frame(_WINDOW_UPDATE, 0, _STREAM, increment))


async def _dial(
    host: str, port: int, tls: bool, deadline: Deadline, loop: asyncio.AbstractEventLoop
) -> _Conn:
    """One connection made READY: TCP, TLS when asked, the prefaces. `_NotReady` when it fails,
    TimeoutError when the dial's own clock ran out (the deadline's cancellation is due)."""
    assert deadline.when is not None
    remaining = max(deadline.when - loop.time(), 0.0)
    try:
        sock = await tcp.dial(host, port, remaining, loop, bounded=True)
    except tcp.DialError as exc:
        if exc.timed_out:
            raise TimeoutError from None
        raise _NotReady(str(exc)) from None
    stream = Stream(sock, loop)
    try:
        if tls:
            # Go sends SNI only for names, never for an IP address (nor does Python's ssl)
            await stream.start_tls(host, _tls_context())
            # grpc-go refuses a TLS server that did not select h2 by ALPN
            if stream.selected_alpn() != "h2":
                raise _NotReady("credentials: cannot check peer: missing selected ALPN property")
        await stream.send(_CLIENT_PREFACE)
        conn = _Conn(stream)
        kind, flags, _, _ = await conn.frame()
        # http2_client.reader: the server's preface is a SETTINGS frame, or the transport fails
        if kind != _SETTINGS or flags & _ACK:
            raise _NotReady("transport: first frame received is not a setting frame")
    except (OSError, EOFError, ValueError) as exc:
        stream.close()
        raise _NotReady(str(exc)) from None
    except BaseException:
        stream.close()
        raise
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


def _status_error(fields: list[tuple[bytes, bytes]], initial: bool) -> _RpcError | None:
    """http2_client.operateHeaders' checks of a response's headers: the HTTP status and the
    content type. None when they are a gRPC answer's."""
    http_status: int | None = None
    http_error = ""
    content_type_error = "malformed header: missing HTTP content-type"
    is_grpc = not initial
    for name, value in fields:
        if name == b"content-type":
            subtype = value.decode("latin-1")
            if subtype == "application/grpc" or subtype.startswith(
                ("application/grpc+", "application/grpc;")
            ):
                is_grpc = True
                content_type_error = ""
            else:
                content_type_error = (
                    f"transport: received unexpected content-type {go_quote(subtype)}"
                )
        elif name == b":status":
            try:
                http_status = int(value)
            except ValueError:
                return _RpcError(
                    _INTERNAL, f"transport: malformed http-status: {value.decode('latin-1')}"
                )
            if http_status != 200:
                phrase = _status_text(http_status)
                http_error = (
                    f"unexpected HTTP status code received from server: {http_status} ({phrase})"
                )
    if is_grpc and not http_error:
        return None
    code = _INTERNAL
    if http_status is not None:
        code = _HTTP_CODES.get(http_status, _UNKNOWN)
    return _RpcError(code, "; ".join(e for e in (http_error, content_type_error) if e))


def _informational(fields: list[tuple[bytes, bytes]]) -> int | None:
    """The status of a 1xx response head (None for any other head)."""
    for name, value in fields:
        if name == b":status":
            return int(value) if len(value) == 3 and value[:1] == b"1" and value.isdigit() else None
    return None


def _status_text(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _grpc_status(fields: list[tuple[bytes, bytes]]) -> _RpcError | None:
    """The trailers' `grpc-status` and `grpc-message`: None for OK."""
    code = _UNKNOWN
    message = ""
    for name, value in fields:
        if name == b"grpc-status":
            try:
                code = int(value)
            except ValueError:
                return _RpcError(
                    _INTERNAL, f"transport: malformed grpc-status: {value.decode('latin-1')}"
                )
        elif name == b"grpc-message":
            message = _decode_grpc_message(value)
    return None if code == 0 else _RpcError(code & 0xFFFFFFFF, message)


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


async def _check(conn: _Conn, request: bytes) -> int:
    """The Check call on a READY connection: the serving status, or `_RpcError`."""
    await conn.stream.send(request)
    initial: list[tuple[bytes, bytes]] | None = None
    message = bytearray()
    while True:
        try:
            kind, flags, stream, payload = await conn.frame()
        except EOFError:
            raise _RpcError(_UNAVAILABLE, "error reading from server: EOF") from None
        except ValueError as exc:
            raise _RpcError(_UNAVAILABLE, f"error reading from server: {exc}") from None
        if stream == 0:
            if kind == _SETTINGS and not flags & _ACK:
                conn.reply(_SETTINGS_ACK)
            elif kind == _PING and not flags & _ACK:
                conn.reply(_frame(_PING, _ACK, 0, payload))
            elif kind == _GOAWAY and int.from_bytes(payload[:4], "big") & 0x7FFFFFFF < _STREAM:
                # the server will not process the stream: grpc-go's errStreamDrain
                raise _RpcError(_UNAVAILABLE, "the connection is draining")
            continue
        if stream != _STREAM:
            continue
        if kind == _RST_STREAM:
            name, code = _RST_CODES.get(
                int.from_bytes(payload[:4], "big"),
                (f"unknown error code {payload[:4].hex()}", _INTERNAL),
            )
            raise _RpcError(code, f"stream terminated by RST_STREAM with error code: {name}")
        if kind == _DATA:
            start, end = 0, len(payload)
            if flags & _PADDED and payload:
                start, end = 1, end - payload[0]
            message += payload[start:end]
            if len(message) >= 5:
                size = int.from_bytes(message[1:5], "big")
                if size > _MAX_MESSAGE:
                    raise _RpcError(
                        _RESOURCE_EXHAUSTED,
                        f"grpc: received message larger than max ({size} vs. {_MAX_MESSAGE})",
                    )
                if len(message) > 5 + size:
                    raise _RpcError(
                        _INTERNAL,
                        "cardinality violation: expected <EOF> for non server-streaming RPCs, "
                        "but received another message",
                    )
            conn.consumed(len(payload))
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
            if next_kind != _CONTINUATION or next_stream != _STREAM:
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
        if initial is None:
            informational = _informational(fields)
            if informational is not None:
                # operateHeaders skips a 1xx head; one that ends the stream is an error
                if ended:
                    raise _RpcError(
                        _INTERNAL,
                        f"protocol error: informational header with status code "
                        f"{informational} must not have END_STREAM set",
                    )
                continue
            refused = _status_error(fields, initial=True)
            if refused is not None:
                raise refused
            if not ended:
                initial = fields
                continue
        elif not ended:
            continue
        # the trailers, or a trailers-only answer
        failed = _grpc_status(fields)
        if failed is not None:
            raise failed
        if len(message) < 5:
            raise _RpcError(
                _INTERNAL,
                "cardinality violation: received no response message from non-streaming RPC",
            )
        size = int.from_bytes(message[1:5], "big")
        if len(message) < 5 + size:
            raise _RpcError(_INTERNAL, "unexpected EOF")
        return _serving_status(bytes(message))


# -- the attempt ----------------------------------------------------------------------------------


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
    Attempt). `loop`: the running loop, when the caller has it at hand."""
    addr = join_host_port(host, port)
    started_at = time.time()
    start = time.monotonic()
    loop = loop or asyncio.get_running_loop()
    deadline = Deadline(loop, timeout)
    ready = False
    conn: _Conn | None = None
    result, output, timed_out = Result.FAILURE, "", False
    try:
        try:
            retries = 0
            # Go dials an empty host as the unspecified address, which reaches this host
            dial_host = host or "0.0.0.0"
            while conn is None:
                try:
                    conn = await _dial(dial_host, port, tls, deadline, loop)
                except _NotReady:
                    await asyncio.sleep(_backoff(retries))
                    retries += 1
            ready = True
            assert deadline.when is not None
            left = deadline.when - loop.time()
            agent = f"{user_agent(kube_version)} {grpc_go_agent(kube_version)}"
            block = _request_block("https" if tls else "http", addr, agent)
            block += _literal(b"grpc-timeout", _grpc_timeout(left))
            request = (
                _SETTINGS_ACK
                + _frame(_HEADERS, _END_HEADERS, _STREAM, block)
                + _request_message(service)
            )
            status = await _check(conn, request)
        finally:
            expired = deadline.disarm()
    except (asyncio.CancelledError, TimeoutError) as exc:
        if isinstance(exc, asyncio.CancelledError) and not expired:
            raise
        timed_out = True
        output = grpc_rpc_timeout(timeout) if ready else connect_timeout_text(addr, timeout)
    except _RpcError as exc:
        timed_out = exc.code == _DEADLINE_EXCEEDED
        output = _rpc_error_text(exc, timeout)
    except OSError as exc:
        # the connection broke while the request was written or the answer read
        where = conn.stream.addresses() if conn is not None else ""
        detail = stream_error("read", where, exc.errno) if where else str(exc)
        output = _rpc_error_text(
            _RpcError(_UNAVAILABLE, f"error reading from server: {detail}"), timeout
        )
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


def grpc_go_agent(kube_version: str) -> str:
    """What grpc-go adds to the user agent of the kubelet whose version is `kube_version`."""
    _, _, minor = kube_version.removeprefix("v").partition(".")
    digits = minor.split(".")[0]
    number = int(digits) if digits.isdigit() else 35
    nearest = min(GRPC_GO_BY_MINOR, key=lambda m: abs(m - number))
    return f"grpc-go/{GRPC_GO_BY_MINOR[nearest]}"


__all__ = ["probe"]
