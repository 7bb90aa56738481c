"""Run the HTTP probe handler over h2c: `httpProber.ProbeH2C` (`pkg/probe/http/http.go`).

It is 1.37's, with H2CContainerProbe on (docs/kubelet-versions.md V13).

With the gate on, the kubelet's `runProbe` (`pkg/kubelet/prober/prober.go`) sends an httpGet
probe whose `protocol` is `HTTP2` through the prober's second transport, `h2cTransport`: an
`http.Transport` whose `Protocols` hold UnencryptedHTTP2 alone, so an http:// request is
HTTP/2 with prior knowledge (RFC 9113 §3.3): on a new connection the client preface, the
client's SETTINGS and WINDOW_UPDATE, then the request's HEADERS; no Upgrade, no ALPN. The
`http.Client` around it, its CheckRedirect (`RedirectChecker`) and `DoHTTPProbe` are the ones
`Probe` uses, so the redirect loop, the 10 KiB body read, the verdict and the timeout's words
are `probetui.probe.exchange`'s, shared with the HTTP/1.1 handlers; this module is the transport
under them, on the lean handler's connection and deadline (`probetui.probe.lean_conn`,
`http_lean.run_attempt`).

What Go's transport does (Go 1.26's `net/http`: `transport.go`, `h2_bundle.go`,
`internal/httpcommon`), and so this one:

- The request (`httpcommon.EncodeHeaders`): `:authority` (the probe's Host header, else the
  URL's), `:method GET`, `:path`, `:scheme http`, then the header map in lower case, values
  as written (not trimmed), without Host, Content-Length and the connection-specific fields,
  Cookie split at each `;`, one User-Agent at most and none when it is empty. A bad name or
  value is refused before the dial as for HTTP/1.1 (`net/http: invalid header field ...`); a
  bad Host, Upgrade, Transfer-Encoding or Connection after it, in the h2 words
  (`http2: invalid Host header`, `http2: invalid Upgrade request header: ["websocket"]`).
- The client's SETTINGS: ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 4 MiB, MAX_FRAME_SIZE 1 MiB,
  MAX_HEADER_LIST_SIZE 10 MiB; the connection's window raised by 1 GiB.
- A server that speaks HTTP/1.1 only answers the preface (a request line `PRI * HTTP/2.0`)
  with an HTTP/1.x response, commonly a 400 or 505. The client reads its first 9 bytes as a
  frame header whose length ("HTT") is past the 1 MiB it reads (`Framer.ReadFrameHeader`):
  `http2: frame too large`, and when the 9 bytes are exactly "HTTP/1.1 ",
  `http2: failed reading the frame payload: http2: frame too large, note that the frame header
  looked like an HTTP/1.1 header` (`H2C_HTTP1_ANSWER`). A Failure, as every error of
  `Client.Do` is: `Get "<url>": <text>`.
- A connection that ends before the response: `unexpected EOF`; after a GOAWAY,
  `http2: server sent GOAWAY and closed the connection; LastStreamID=N, ErrCode=X, debug="..."`.
  A RST_STREAM: `stream error: stream ID 1; <CODE>; received from peer`. A response head the
  client refuses (`handleResponse`, `readMetaFrame`): `stream error: stream ID 1;
  PROTOCOL_ERROR; malformed response from server: missing status pseudo header` and the like;
  a frame it refuses: `connection error: <CODE>`.
- Retries (`http2canRetryError`, `Transport.roundTrip`): a RST_STREAM with REFUSED_STREAM or
  PROTOCOL_ERROR before the response, or a GOAWAY with NO_ERROR that leaves the request out,
  sends the request again on a new connection at once, again and again until the deadline.
  A GOAWAY with an error code that leaves it out fails it:
  `http2: Transport received GOAWAY from server ErrCode:X`.
- An https URL (a redirect's): `h2cTransport` has no TLS configuration, so the certificate is
  verified (no InsecureSkipVerify, unlike `Probe`'s transport) and no ALPN is offered, which
  leaves HTTP/1.1 over TLS: the lean handler's hop with a verifying TLS context.

The framing is written here, on `hpack` (the HPACK codec of the h2 project): h2's own
H2Connection refuses every frame after a GOAWAY, where Go's client still reads the streams the
GOAWAY let through, and its refusals are in its words where the kubelet's event carries Go's.
Not modelled: flow control past the windows above (a probe reads 10 KiB), PRIORITY and
SETTINGS values beyond their validity, the PING health check (the prober sets no
ReadIdleTimeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import struct
from collections.abc import AsyncIterator
from functools import cache

import hpack

from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt
from probetui.probe.gotext import H2C_HTTP1_ANSWER, GoError, go_quote
from probetui.probe.http_lean import Hops as Http1Hops
from probetui.probe.http_lean import parse_url, run_attempt, spec_key
from probetui.probe.lean_conn import Deadline, Stream, connect, read_error
from probetui.probe.request import (
    HeaderMap,
    SpecHeaders,
    check_header_map,
    custom_host,
    header_map,
    is_token,
    valid_host_header,
)
from probetui.probe.url import authority

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

# frame types (RFC 9113 §6) and flags
_DATA, _HEADERS, _PRIORITY, _RST_STREAM, _SETTINGS = 0, 1, 2, 3, 4
_PUSH_PROMISE, _PING, _GOAWAY, _WINDOW_UPDATE, _CONTINUATION = 5, 6, 7, 8, 9
_END_STREAM = _ACK = 0x1
_END_HEADERS = 0x4
_PADDED = 0x8
_PRIORITY_FLAG = 0x20

# the one stream a probe's connection carries
_STREAM = 1
# http2Transport's defaults (h2_bundle.go): what the client's SETTINGS say and what it reads
_MAX_READ_FRAME = 1 << 20  # defaultMaxReadFrameSize
_STREAM_WINDOW = 4 << 20  # transportDefaultStreamFlow
_CONN_WINDOW = 1 << 30  # transportDefaultConnFlow
_MAX_HEADER_LIST = 10 << 20  # Transport.maxHeaderListSize
# the largest frame the client writes before the server's SETTINGS say more (the spec's floor)
_PEER_MAX_FRAME = 16384
_GO_USER_AGENT = "Go-http-client/2.0"

# ErrCode.String (h2_bundle.go)
_ERR_CODES = (
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
)
_NO_ERROR, _PROTOCOL, _FLOW_CONTROL, _FRAME_SIZE, _REFUSED, _COMPRESSION = 0, 1, 3, 6, 7, 9

FRAME_TOO_LARGE = "http2: frame too large"
UNEXPECTED_EOF = "unexpected EOF"
MORE_THAN_DECLARED = "net/http: server replied with more than declared Content-Length; truncated"
GRACEFUL_GOAWAY = "http2: Transport received Server's graceful shutdown GOAWAY"
# invalidHTTP1LookingFrameHeader: the frame header "HTTP/1.1 " reads as
_HTTP1_HEADER = (0x485454, ord("P"), ord("/"), 0x312E3120)
_ATOI = re.compile(r"[+-]?[0-9]+")
_CONN_SPECIFIC = frozenset(
    {"Host", "Content-Length", "Connection", "Proxy-Connection", "Transfer-Encoding"}
    | {"Upgrade", "Keep-Alive"}
)


def err_code(code: int) -> str:
    """Go's `ErrCode.String`."""
    return _ERR_CODES[code] if code < len(_ERR_CODES) else f"unknown error code 0x{code:x}"


def connection_error(code: int) -> str:
    """`ConnectionError.Error`: a frame the client refused ends the connection."""
    return f"connection error: {err_code(code)}"


def stream_error(code: int, cause: str | None = None) -> str:
    """`StreamError.Error` for the probe's stream."""
    if cause is None:
        return f"stream error: stream ID {_STREAM}; {err_code(code)}"
    return f"stream error: stream ID {_STREAM}; {err_code(code)}; {cause}"


def goaway_error(last_stream: int, code: int, debug: bytes) -> str:
    """`GoAwayError.Error`: the connection ended after a GOAWAY that let the stream through."""
    return (
        f"http2: server sent GOAWAY and closed the connection; LastStreamID={last_stream}, "
        f"ErrCode={err_code(code)}, debug={go_quote(debug)}"
    )


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    head = struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream)
    return head + payload


# what newClientConn writes first: the preface, its SETTINGS, the connection's window
_SETTINGS_PAYLOAD = struct.pack(
    ">HIHIHIHI", 2, 0, 4, _STREAM_WINDOW, 5, _MAX_READ_FRAME, 6, _MAX_HEADER_LIST
)
_OPENING = (
    _PREFACE
    + _frame(_SETTINGS, 0, 0, _SETTINGS_PAYLOAD)
    + _frame(_WINDOW_UPDATE, 0, 0, struct.pack(">I", _CONN_WINDOW))
)


class _Retry(Exception):
    """Signals that the request goes again on a new connection, as Go's transport sends it again."""


class _ConnEnd(Exception):
    """Signals that the connection ended (`clientConnReadLoop.cleanup`); `str()` is what its
    streams get."""


class _ConnRefusal(Exception):
    """Signals a frame the client refuses: a `ConnectionError` with this code ends the
    connection."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


# -- the request ------------------------------------------------------------------------------


def _conn_header_error(headers: HeaderMap) -> str | None:
    """`httpcommon.checkConnHeaders`: connection-level fields HTTP/2 cannot carry."""

    def listed(values: list[str]) -> str:
        return "[" + " ".join(go_quote(v) for v in values) + "]"

    upgrade = headers.get("Upgrade")
    if upgrade and upgrade[0] not in ("", "chunked"):
        return f"invalid Upgrade request header: {listed(upgrade)}"
    te = headers.get("Transfer-Encoding")
    if te and (len(te) > 1 or te[0] not in ("", "chunked")):
        return f"invalid Transfer-Encoding request header: {listed(te)}"
    conn = headers.get("Connection")
    if conn and (len(conn) > 1 or conn[0].lower() not in ("", "close", "keep-alive")):
        return f"invalid Connection request header: {listed(conn)}"
    return None


def request_fields(url: str, path: str, headers: HeaderMap, host: str) -> list[tuple[str, str]]:
    """The HEADERS' fields, in Go's order (`httpcommon.EncodeHeaders`). `path` is the request
    target, `host` the custom Host ("" for the URL's). Raises `GoError` with the h2 client's
    refusal, which Go reports after the connection is made."""
    problem = _conn_header_error(headers)
    if problem is not None:
        raise GoError(f"http2: {problem}")
    host = _punycode(host or authority(url))
    if not valid_host_header(host):
        raise GoError("http2: invalid Host header")
    if not (path.startswith("/") or path == "*"):
        raise GoError(f"http2: invalid request :path {go_quote(path)}")
    fields = [(":authority", host), (":method", "GET"), (":path", path), (":scheme", "http")]
    agent = False
    for name, values in headers.items():
        if name in _CONN_SPECIFIC:
            continue
        lower = name.lower()
        if name == "User-Agent":
            # at most one User-Agent, and none when it is empty
            agent = True
            if values and values[0]:
                fields.append((lower, values[0]))
        elif name == "Cookie":
            for value in values:
                fields.extend((lower, crumb) for crumb in _cookie_crumbs(value))
        else:
            fields.extend((lower, value) for value in values)
    if not agent:
        fields.append(("user-agent", _GO_USER_AGENT))
    return fields


def _punycode(host: str) -> str:
    """httpguts.PunycodeHostPort: a non-ASCII host name in its ASCII form."""
    if host.isascii():
        return host
    name, sep, port = host.rpartition(":")
    if not sep or not port.isdigit():
        name, sep, port = host, "", ""
    try:
        return name.encode("idna").decode("ascii") + sep + port
    except UnicodeError:
        return host


def _cookie_crumbs(value: str) -> list[str]:
    """EncodeHeaders' split of a Cookie at each ';', the spaces after it dropped."""
    out = []
    while (cut := value.find(";")) >= 0:
        out.append(value[:cut])
        rest = cut + 1
        while rest + 1 <= len(value) and value[rest] == " ":
            rest += 1
        value = value[rest:]
    if value:
        out.append(value)
    return out


def _headers_frames(block: bytes) -> bytes:
    """HEADERS (END_STREAM) then CONTINUATION frames, none past the peer's frame size."""
    chunks = [block[i : i + _PEER_MAX_FRAME] for i in range(0, len(block), _PEER_MAX_FRAME)]
    chunks = chunks or [b""]
    out = bytearray()
    for i, chunk in enumerate(chunks):
        kind = _HEADERS if i == 0 else _CONTINUATION
        flags = (_END_STREAM if i == 0 else 0) | (_END_HEADERS if i == len(chunks) - 1 else 0)
        out += _frame(kind, flags, _STREAM, chunk)
    return bytes(out)


# -- the connection ---------------------------------------------------------------------------


def _valid_value(value: bytes) -> bool:
    # httpguts.ValidHeaderFieldValue: no control bytes but space and tab
    return not any((b < 0x20 and b not in (0x09, 0x20)) or b == 0x7F for b in value)


def _valid_wire_name(name: bytes) -> bool:
    # validWireHeaderFieldName: token characters, no upper case
    text = name.decode("latin-1")
    return is_token(text) and not any("A" <= c <= "Z" for c in text)


def _field_error(fields: list[tuple[bytes, bytes]]) -> str | None:
    """`readMetaFrame`'s checks of a decoded head, then `checkPseudos`: the first problem."""
    regular = False
    for name, value in fields:
        # within one field the later check's words win, as the emit function overwrites
        problem = None
        if not _valid_value(value):
            problem = f"invalid header field value for {go_quote(name)}"
        if name.startswith(b":"):
            if regular:
                problem = "pseudo header field after regular"
        else:
            regular = True
            if not _valid_wire_name(name):
                problem = f"invalid header field name {go_quote(name)}"
        if problem is not None:
            return problem
    seen: list[bytes] = []
    request = response = False
    for name, _ in fields:
        if not name.startswith(b":"):
            continue
        if name in (b":method", b":path", b":scheme", b":authority", b":protocol"):
            request = True
        elif name == b":status":
            response = True
        else:
            return f"invalid pseudo-header {go_quote(name)}"
        if name in seen:
            return f"duplicate pseudo-header {go_quote(name)}"
        seen.append(name)
    if request and response:
        return "mix of request and response pseudo headers"
    return None


class _Conn:
    """Runs one h2c connection carrying the probe's one request: Go's `ClientConn` and its read
    loop, run a frame at a time as the caller needs the next thing."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self._buf = bytearray()
        self._decoder = hpack.Decoder(max_header_list_size=_MAX_HEADER_LIST * 2)
        self._got_settings = False
        self._goaway: tuple[int, int] | None = None  # (last stream ID, error code)
        self._goaway_debug = b""
        self._continuing: tuple[int, int, bytearray] | None = None  # HEADERS awaiting the rest
        # the stream
        self.status: int | None = None
        self.headers: list[tuple[bytes, bytes]] = []
        self._past_headers = False
        self._past_trailers = False
        self._data = bytearray()
        self._remaining = -1  # Content-Length still to come, -1 where none was declared
        self._ended = False  # END_STREAM seen (peerClosed)
        self._abort: tuple[str, bool] | None = None  # (error, retried on a new connection)

    # -- reading frames ---------------------------------------------------------------------

    async def _fill(self, n: int, start: int) -> None:
        """Read until `n` bytes are buffered, the part being read starting at `start`. At the
        end of the connection, raise what the stream is told: io.ReadFull's io.EOF where none
        of the part had come, io.ErrUnexpectedEOF where some had."""
        while len(self._buf) < n:
            try:
                data = await self._stream.recv()
            except OSError as exc:
                raise _ConnEnd(self._ended_by(read_error(exc, self._stream))) from None
            if not data:
                partial = len(self._buf) > start
                raise _ConnEnd(UNEXPECTED_EOF if partial else self._ended_by(UNEXPECTED_EOF))
            self._buf += data

    def _ended_by(self, error: str) -> str:
        """cleanup: an end of file or a failed read after a GOAWAY is the GOAWAY's error (an
        end of file alone is io.ErrUnexpectedEOF)."""
        if self._goaway is not None:
            last, code = self._goaway
            return goaway_error(last, code, self._goaway_debug)
        return error

    async def _read_frame(self) -> tuple[int, int, int, bytes]:
        """`Framer.ReadFrame`'s header and payload: (type, flags, stream ID, payload)."""
        await self._fill(9, 0)
        head = bytes(self._buf[:9])
        length = int.from_bytes(head[:3], "big")
        kind, flags = head[3], head[4]
        stream_id = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        if length > _MAX_READ_FRAME:
            if (length, kind, flags, stream_id) == _HTTP1_HEADER:
                raise _ConnEnd(H2C_HTTP1_ANSWER)
            raise _ConnEnd(FRAME_TOO_LARGE)
        # checkFrameOrder: a HEADERS without END_HEADERS is followed by its CONTINUATIONs only
        pending = self._continuing
        if (pending is not None and (kind != _CONTINUATION or stream_id != pending[0])) or (
            pending is None and kind == _CONTINUATION
        ):
            raise _ConnRefusal(_PROTOCOL)
        await self._fill(9 + length, 9)
        payload = bytes(self._buf[9 : 9 + length])
        del self._buf[: 9 + length]
        return kind, flags, stream_id, payload

    async def step(self) -> None:
        """Read and act on one frame (`clientConnReadLoop.run`); at the connection's end the
        stream, unless it had ended, is aborted with the connection's error."""
        try:
            kind, flags, stream_id, payload = await self._read_frame()
            if not self._got_settings:
                if kind != _SETTINGS:
                    raise _ConnRefusal(_PROTOCOL)
                self._got_settings = True
            await self._process(kind, flags, stream_id, payload)
        except _ConnRefusal as exc:
            self._conn_end(connection_error(exc.code))
        except _ConnEnd as exc:
            self._conn_end(str(exc))

    def _conn_end(self, error: str) -> None:
        # a stream that had ended keeps its body; any other gets the connection's error
        self._abort_stream(error, False)

    async def _process(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if kind == _DATA:
            self._on_data(flags, stream_id, payload)
        elif kind in (_HEADERS, _CONTINUATION):
            self._on_headers(kind, flags, stream_id, payload)
        elif kind == _RST_STREAM:
            if len(payload) != 4:
                raise _ConnRefusal(_FRAME_SIZE)
            if stream_id == 0:
                raise _ConnRefusal(_PROTOCOL)
            if stream_id == _STREAM:
                code = int.from_bytes(payload, "big")
                # http2canRetryError: refused, or a protocol error the server reported
                retry = self.status is None and code in (_REFUSED, _PROTOCOL)
                self._abort_stream(stream_error(code, "received from peer"), retry)
        elif kind == _SETTINGS:
            await self._on_settings(flags, stream_id, payload)
        elif kind == _PUSH_PROMISE:
            # the client's SETTINGS said ENABLE_PUSH 0
            raise _ConnRefusal(_PROTOCOL)
        elif kind == _PING:
            if len(payload) != 8:
                raise _ConnRefusal(_FRAME_SIZE)
            if stream_id != 0:
                raise _ConnRefusal(_PROTOCOL)
            if not flags & _ACK:
                await self._send(_frame(_PING, _ACK, 0, payload))
        elif kind == _GOAWAY:
            self._on_goaway(stream_id, payload)
        elif kind == _WINDOW_UPDATE:
            if len(payload) != 4:
                raise _ConnRefusal(_FRAME_SIZE)
            if int.from_bytes(payload, "big") & 0x7FFFFFFF == 0:
                if stream_id == 0:
                    raise _ConnRefusal(_PROTOCOL)
                if stream_id == _STREAM:
                    self._abort_stream(stream_error(_PROTOCOL), False)
        elif kind == _PRIORITY:
            if stream_id == 0:
                raise _ConnRefusal(_PROTOCOL)
            if len(payload) != 5:
                raise _ConnRefusal(_FRAME_SIZE)
        # other frame types are ignored, as RFC 9113 §4.1 asks

    async def _send(self, data: bytes) -> None:
        # a write that fails shows as the read that follows it
        with contextlib.suppress(OSError):
            await self._stream.send(data)

    async def _on_settings(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id != 0:
            raise _ConnRefusal(_PROTOCOL)
        if flags & _ACK:
            if payload:
                raise _ConnRefusal(_FRAME_SIZE)
            return
        if len(payload) % 6:
            raise _ConnRefusal(_FRAME_SIZE)
        for i in range(0, len(payload), 6):
            setting, value = struct.unpack(">HI", payload[i : i + 6])
            # Setting.Valid
            if setting == 2 and value not in (0, 1):
                raise _ConnRefusal(_PROTOCOL)
            if setting == 4 and value > 0x7FFFFFFF:
                raise _ConnRefusal(_FLOW_CONTROL)
            if setting == 5 and not 16384 <= value <= (1 << 24) - 1:
                raise _ConnRefusal(_PROTOCOL)
        await self._send(_frame(_SETTINGS, _ACK, 0))

    def _on_goaway(self, stream_id: int, payload: bytes) -> None:
        if stream_id != 0:
            raise _ConnRefusal(_PROTOCOL)
        if len(payload) < 8:
            raise _ConnRefusal(_FRAME_SIZE)
        last = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
        code = int.from_bytes(payload[4:8], "big")
        # setGoAway: the first debug data is kept, and an earlier error code over NO_ERROR
        if not self._goaway_debug:
            self._goaway_debug = payload[8:]
        if self._goaway is not None and self._goaway[1] != _NO_ERROR:
            code = self._goaway[1]
        self._goaway = (last, code)
        if last < _STREAM and not self._ended:
            if code != _NO_ERROR:
                # the first stream of a connection is not retried after an error GOAWAY
                error = f"http2: Transport received GOAWAY from server ErrCode:{err_code(code)}"
                self._abort_stream(error, False)
            else:
                self._abort_stream(GRACEFUL_GOAWAY, self.status is None)

    def _abort_stream(self, error: str, retry: bool) -> None:
        if self._abort is None and not self._ended:
            self._abort = (error, retry)

    def _on_data(self, flags: int, stream_id: int, payload: bytes) -> None:
        if stream_id == 0:
            raise _ConnRefusal(_PROTOCOL)
        data = _unpad(flags, payload)
        if stream_id != _STREAM or self._abort is not None or self._ended:
            if stream_id > _STREAM + 1:
                # a stream the client never opened (nextStreamID is 3): "unsolicited DATA"
                raise _ConnRefusal(_PROTOCOL)
            return
        if not self._past_headers:
            self._abort_stream(stream_error(_PROTOCOL), False)
            return
        self._data += data
        if flags & _END_STREAM:
            self._ended = True

    def _on_headers(self, kind: int, flags: int, stream_id: int, payload: bytes) -> None:
        if kind == _HEADERS:
            if stream_id == 0:
                raise _ConnRefusal(_PROTOCOL)
            fragment = _unpad(flags, payload)
            if flags & _PRIORITY_FLAG:
                if len(fragment) < 5:
                    raise _ConnRefusal(_FRAME_SIZE)
                fragment = fragment[5:]
            self._continuing = (stream_id, flags, bytearray(fragment))
        else:
            assert self._continuing is not None
            self._continuing[2].extend(payload)
        if not flags & _END_HEADERS:
            return
        assert self._continuing is not None
        stream_id, first_flags, block = self._continuing
        self._continuing = None
        try:
            fields = [(bytes(n), bytes(v)) for n, v in self._decoder.decode(bytes(block), raw=True)]
        except hpack.HPACKError:
            raise _ConnRefusal(_COMPRESSION) from None
        if stream_id != _STREAM or self._abort is not None or self._ended:
            return  # a stream that is not (or no longer) the probe's: ignored
        problem = _field_error(fields)
        if problem is not None:
            self._abort_stream(stream_error(_PROTOCOL, problem), False)
            return
        if self._past_headers:
            self._trailers(first_flags, fields)
            return
        self._response(first_flags, fields)

    def _trailers(self, flags: int, fields: list[tuple[bytes, bytes]]) -> None:
        """processTrailers: one HEADERS more, which ends the stream, without pseudo fields."""
        if self._past_trailers or not flags & _END_STREAM:
            raise _ConnRefusal(_PROTOCOL)
        if any(name.startswith(b":") for name, _ in fields):
            raise _ConnRefusal(_PROTOCOL)
        self._past_trailers = True
        self._ended = True

    def _response(self, flags: int, fields: list[tuple[bytes, bytes]]) -> None:
        """handleResponse."""
        if sum(len(n) + len(v) + 32 for n, v in fields) > _MAX_HEADER_LIST:
            error = "http2: response header list larger than advertised limit"
            self._abort_stream(stream_error(_PROTOCOL, error), False)
            return
        status = next((v for n, v in fields if n == b":status"), b"")
        if not status:
            error = "malformed response from server: missing status pseudo header"
            self._abort_stream(stream_error(_PROTOCOL, error), False)
            return
        if _ATOI.fullmatch(status.decode("latin-1")) is None or abs(int(status)) >= 1 << 63:
            error = "malformed response from server: malformed non-numeric status pseudo header"
            self._abort_stream(stream_error(_PROTOCOL, error), False)
            return
        code = int(status)
        if 100 <= code <= 199:
            if flags & _END_STREAM:
                error = "1xx informational response with END_STREAM flag"
                self._abort_stream(stream_error(_PROTOCOL, error), False)
            return  # an interim head: the final one is still to come
        self._past_headers = True
        self.status = code
        self.headers = [(n, v) for n, v in fields if not n.startswith(b":")]
        lengths = [v for n, v in self.headers if n == b"content-length"]
        if len(lengths) == 1 and lengths[0].isdigit() and int(lengths[0]) < 1 << 63:
            self._remaining = int(lengths[0])
        if flags & _END_STREAM:
            self._ended = True

    # -- what the hop reads -------------------------------------------------------------------

    async def response(self) -> None:
        """Frames until the final response head. Raises `GoError` with the stream's error, or
        `_Retry` where Go's transport would send the request again."""
        while self.status is None:
            if self._abort is not None:
                error, retry = self._abort
                if retry:
                    raise _Retry
                raise GoError(error)
            await self.step()

    async def body_chunks(self) -> AsyncIterator[bytes]:
        """The body as `transportResponseBody.Read` hands it out: what has come, then the end
        or the error; raises `_BodyBroken`."""
        while True:
            if self._data:
                chunk = bytes(self._data)
                self._data.clear()
                if self._remaining != -1:
                    if len(chunk) > self._remaining:
                        yield chunk[: self._remaining]
                        raise _BodyBroken(MORE_THAN_DECLARED)
                    self._remaining -= len(chunk)
                yield chunk
            elif self._abort is not None:
                raise _BodyBroken(self._abort[0])
            elif self._ended:
                if self._remaining > 0:
                    raise _BodyBroken(UNEXPECTED_EOF)
                return
            else:
                await self.step()


def _unpad(flags: int, payload: bytes) -> bytes:
    if not flags & _PADDED:
        return payload
    if not payload or payload[0] > len(payload) - 1:
        # "pad size larger than data payload"
        raise _ConnRefusal(_PROTOCOL)
    return payload[1 : len(payload) - payload[0]]


class _BodyBroken(Exception):
    """Signals that the body broke off; `str()` is what the body's Read returned."""


class _Response:
    """Holds one hop's answer on its connection, as `exchange` reads it."""

    __slots__ = ("_conn", "_stream", "status_code")

    def __init__(self, conn: _Conn, stream: Stream) -> None:
        self._conn = conn
        self._stream = stream
        assert conn.status is not None
        self.status_code = conn.status

    def header_values(self, name: bytes) -> list[str]:
        return [_text(v) for n, v in self._conn.headers if n == name]

    async def read_at_most(self, limit: int, sink: bytearray) -> str | None:
        try:
            async for chunk in self._conn.body_chunks():
                sink += chunk[: limit - len(sink)]
                if len(sink) >= limit:
                    return None
        except _BodyBroken as exc:
            return str(exc)
        return None

    async def close(self) -> None:
        self._stream.close()


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.decode("latin-1")


@cache
def verifying_tls_context() -> ssl.SSLContext:
    """`h2cTransport`'s TLS: Go's defaults, as no TLSClientConfig is given: the system's roots,
    the name checked, TLS 1.2 or later, and no ALPN (its Protocols offer neither h2 nor
    http/1.1 over TLS, so the connection speaks HTTP/1.1)."""
    ctx = ssl.create_default_context()
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


class Hops:
    """Makes the exchange's hops on `h2cTransport`: each a new connection, h2c for http,
    HTTP/1.1 over verified TLS for https; every stream opened goes into `streams`."""

    __slots__ = ("_deadline", "_https", "_kube_version", "_spec_headers", "_streams")

    def __init__(
        self,
        spec_headers: tuple[tuple[str, str], ...],
        kube_version: str,
        deadline: Deadline,
        streams: list[Stream],
    ) -> None:
        self._spec_headers = spec_headers
        self._kube_version = kube_version
        self._deadline = deadline
        self._streams = streams
        self._https = Http1Hops(
            spec_headers, kube_version, deadline, streams, tls=verifying_tls_context()
        )

    def header_map(self) -> HeaderMap:
        return header_map(self._spec_headers, self._kube_version)

    async def send(self, url: str, headers: HeaderMap | None, host: str) -> _Response:
        target = parse_url(url)
        if target[0] == "https":
            return await self._https.send(url, headers, host)  # type: ignore[return-value]
        if headers is None:
            headers = self.header_map()
            host = custom_host(headers)
        # Transport.roundTrip's checks come before the dial, for HTTP/2 as for HTTP/1.1
        check_header_map(headers)
        path = target[3].decode("ascii", "surrogateescape")
        while True:
            stream = await connect("http", target[1], target[2], self._deadline)
            self._streams.append(stream)
            conn = _Conn(stream)
            with contextlib.suppress(OSError):
                await stream.send(_OPENING)
            fields = request_fields(url, path, headers, host)
            block = hpack.Encoder().encode(fields)
            with contextlib.suppress(OSError):
                await stream.send(_headers_frames(block))
            try:
                await conn.response()
            except _Retry:
                # Transport.roundTrip: a new connection for the same request, at once
                stream.close()
                continue
            return _Response(conn, stream)


async def probe(
    url: str,
    headers: SpecHeaders = (),
    timeout: float = 1.0,
    *,
    follow_non_local_redirects: bool = False,
    kube_version: str = DEFAULT_KUBE_VERSION,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Attempt:
    """One h2c probe attempt (`ProbeH2C` + `DoHTTPProbe`): the same arguments and the same
    Attempt as `probetui.probe.http_lean.probe`, over HTTP/2 with prior knowledge."""
    key = spec_key(headers)
    return await run_attempt(
        url,
        lambda deadline, streams: Hops(key, kube_version, deadline, streams),
        timeout,
        follow_non_local_redirects,
        loop,
    )


__all__ = ["Hops", "probe", "request_fields", "verifying_tls_context"]
