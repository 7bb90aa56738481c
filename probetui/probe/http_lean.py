"""HTTP probe handler, `pkg/probe/http` (docs/kubelet-behaviour.md §13), lean: raw asyncio
sockets and h11.

The same attempt as `probetui.probe.http` (the reference, on httpx) at a fraction of the CPU:
one GET on a new connection per hop, the kubelet's headers, redirect policy, 10 KiB body cap
and one overall deadline, and Go's words for every error. The request and response are framed
by h11, the parser httpcore uses under httpx, so both handlers accept and reject the same
bytes; before h11, a response head goes through `probetui.probe.response_head`'s gate, Go's own
reading of a head (the status line alone and first, at most 10 MiB, textproto's header-line
rules), so what Go refuses is refused in Go's words. The request's bytes are made by h11 once
per probe and kept; the common response (a whole head in the first read, plain ASCII, framed by
one Content-Length or by the close), which Go reads as it is, is read by `_plain_head` without
h11's objects, and anything else goes through the gate to h11 from its first byte
(`tests/probe/test_http_lean_plain.py` holds the two readings identical). The header map, the
wire header order, the head gate, the redirect loop, the body reading and the error texts come
from the modules both handlers share (listed in `probetui.probe.http`); this one is the
transport under them.
`tests/probe/test_http_lean.py` runs the reference's test vectors against both and compares
every field of the Attempt.

What it leaves out is httpx's machinery for a general client (request and response objects, a
connection pool, anyio task groups, trace hooks): a probe needs a socket, one request, and the
head and first 10 KiB of one response. The dial is the TCP handler's (the kubelet's
`ProbeDialer`, which upstream's HTTP transport uses too; see `probetui.probe.tcp` on linger).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable
from functools import lru_cache
from typing import TypeVar

import h11

# the URL's parts come from httpx's parser, so the request target matches the reference's byte
# for byte; parsed once per URL and cached, it costs nothing per attempt
import httpx

from probetui.probe import tcp
from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt
from probetui.probe.exchange import Progress, exchange, read_at_most, tls_context
from probetui.probe.gotext import (
    MAX_RESPONSE_HEADER_BYTES,
    GoError,
    conn_addresses,
    head_error,
    stream_error,
    tls_error,
    unsupported_scheme,
)
from probetui.probe.request import HeaderMap, SpecHeaders, custom_host, header_map, wire_headers
from probetui.probe.response_head import HeadGate
from probetui.spec.model import HTTPHeader


class _Failed(GoError):
    """A hop failed before its response head arrived; `detail` follows `Get "<url>": `."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _BodyBroken(Exception):
    """The body broke off after the head; `text` is what ioutil.ReadAll would return."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


# What httpx makes of a URL: scheme, host (no IPv6 brackets, IDNA-encoded), port, and the
# request target (path and query, as the request line carries it). A plain tuple of strings,
# bytes and ints, like everything cached here: the cyclic garbage collector stops tracking such
# tuples, so a cluster's worth of cached URLs adds nothing to its full collections.
_Target = tuple[str, str, int, bytes]


@lru_cache(maxsize=32768)
def _parse(url: str) -> _Target:
    try:
        u = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise GoError(str(exc)) from None
    scheme = u.scheme
    if scheme not in ("http", "https"):
        # Go knows no other scheme; httpcore would also accept ws/wss as plain HTTP
        raise _Failed(unsupported_scheme(scheme))
    port = u.port if u.port is not None else (443 if scheme == "https" else 80)
    return scheme, u.raw_host.decode("ascii"), port, u.raw_path


# httpcore's HTTP11Connection: bytes per read
_READ_NUM_BYTES = 64 * 1024
# a dial with no overall deadline (timeout 0) still needs a number
_NO_DEADLINE = 1e9

_T = TypeVar("_T")


class _DialTimeout(Exception):
    """The dial ran out of time: the attempt's deadline, reported as Go's Client.Timeout."""


class _Deadline:
    """The attempt's deadline: at `when` (loop time; None for none) the attempt's task is
    cancelled. asyncio.timeout's logic, with the loop and task handed in: each of its two
    get_running_loop() calls is a getpid() system call on Python 3.11, a few per cent of an
    attempt at cluster rates."""

    __slots__ = ("_cancelling", "_handle", "_task", "expired", "loop", "when")

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.expired = False
        task = asyncio.current_task(loop)
        assert task is not None, "an HTTP probe runs in a task"
        self._task = task
        self._cancelling = task.cancelling()
        if timeout > 0:
            self.when: float | None = loop.time() + timeout
            self._handle: asyncio.TimerHandle | None = loop.call_at(self.when, self._expire)
        else:
            self.when = self._handle = None

    def _expire(self) -> None:
        self.expired = True
        self._task.cancel()

    def disarm(self) -> bool:
        """Stop the clock. True when it had run out and its cancellation is the only one the
        task has: a CancelledError is then the deadline's, to be reported as a timeout."""
        if self._handle is not None:
            self._handle.cancel()
        return self.expired and self._task.uncancel() <= self._cancelling


class _Stream:
    """One connected socket, with TLS over memory BIOs when the scheme is https.

    Reads and writes go straight to `loop.sock_recv` / `loop.sock_sendall`: no transport or
    protocol objects per connection. TLS runs the way anyio's TLSStream runs it under httpcore
    (with `standard_compatible=False`), so its errors and EOFs surface the same way.
    """

    __slots__ = ("_incoming", "_loop", "_outgoing", "_tls", "local", "remote", "sock")

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self.sock = sock
        self._loop = loop
        self._tls: ssl.SSLObject | None = None
        self._incoming: ssl.MemoryBIO | None = None
        self._outgoing: ssl.MemoryBIO | None = None
        # taken now: once a reset is seen the peer's address can no longer be asked for
        try:
            self.local = sock.getsockname()
            self.remote = sock.getpeername()
        except OSError:
            self.local = self.remote = None

    def addresses(self) -> str:
        if self.local is None:
            return ""
        return conn_addresses(self.local, self.remote)

    def close(self) -> None:
        # a stream is closed once its response is read and again when the attempt ends
        if self.sock.fileno() != -1:
            self.sock.close()

    async def start_tls(self, hostname: str) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = tls_context().wrap_bio(
            self._incoming, self._outgoing, server_side=False, server_hostname=hostname or None
        )
        await self._tls_call(self._tls.do_handshake)

    async def _flush(self) -> None:
        assert self._outgoing is not None
        if self._outgoing.pending:
            await self._loop.sock_sendall(self.sock, self._outgoing.read())

    async def _tls_call(self, method: Callable[..., _T], *args: object) -> _T:
        """anyio's TLSStream._call_sslobject_method: pump the BIOs until `method` completes."""
        assert self._incoming is not None and self._outgoing is not None
        while True:
            try:
                result = method(*args)
            except ssl.SSLWantReadError:
                await self._flush()
                data = await self._loop.sock_recv(self.sock, _READ_NUM_BYTES)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
            except ssl.SSLWantWriteError:
                await self._flush()
            else:
                await self._flush()
                return result

    async def send(self, data: bytes) -> None:
        if self._tls is None:
            await self._loop.sock_sendall(self.sock, data)
        else:
            await self._tls_call(self._tls.write, data)

    async def recv(self) -> bytes:
        """Up to 64 KiB; b"" at the end, including a TLS peer that hangs up without notice."""
        if self._tls is None:
            return await self._loop.sock_recv(self.sock, _READ_NUM_BYTES)
        try:
            return await self._tls_call(self._tls.read, _READ_NUM_BYTES)
        except ssl.SSLZeroReturnError:
            return b""
        except ssl.SSLError as exc:
            if isinstance(exc, ssl.SSLEOFError) or "UNEXPECTED_EOF_WHILE_READING" in (
                exc.strerror or ""
            ):
                return b""
            raise


def _read_error(err: OSError, stream: _Stream) -> str:
    """Go's text for a socket error while waiting for or reading a response."""
    if isinstance(err, ssl.SSLError):
        return tls_error(err)
    return stream_error("read", stream.addresses(), err.errno)


async def _connect(scheme: str, host: str, port: int, deadline: _Deadline) -> _Stream:
    """A connection to host:port, TLS on it for https, within what is left of `deadline`.
    Raises `_DialTimeout` when the dial runs out of time, `GoError` when it or TLS fails."""
    loop = deadline.loop
    when = deadline.when
    remaining = _NO_DEADLINE if when is None else max(when - loop.time(), 0)
    try:
        sock = await tcp.dial(host, port, remaining, loop, bounded=when is not None)
    except tcp.DialError as exc:
        if exc.timed_out:
            raise _DialTimeout from None
        raise GoError(str(exc)) from None
    stream = _Stream(sock, loop)
    if scheme == "https":
        try:
            await stream.start_tls(host)
        except ssl.SSLError as exc:
            stream.close()
            raise GoError(tls_error(exc)) from None
        except OSError as exc:
            stream.close()
            raise GoError(_read_error(exc, stream)) from None
        except BaseException:
            stream.close()
            raise
    return stream


class _Response:
    """One hop's response head; `body_chunks()` hands out its body."""

    __slots__ = ("_stream", "headers", "status_code")

    def __init__(self, stream: _Stream, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        self._stream = stream
        self.status_code = status
        self.headers: list[tuple[bytes, bytes]] = headers

    def header_values(self, name: bytes) -> list[str]:
        """httpx's Headers.get_list: one text encoding for the whole head, as httpx picks it."""
        raw = [v for k, v in self.headers if k.lower() == name]
        if not raw:
            return []
        encoding = "ascii"
        for candidate in ("ascii", "utf-8"):
            try:
                for k, v in self.headers:
                    k.decode(candidate)
                    v.decode(candidate)
            except UnicodeDecodeError:
                continue
            encoding = candidate
            break
        else:
            encoding = "iso-8859-1"
        return [v.decode(encoding) for v in raw]

    def body_chunks(self) -> AsyncIterator[bytes]:
        raise NotImplementedError

    async def read_at_most(self, limit: int, sink: bytearray) -> str | None:
        try:
            await _read_at_most(self, limit, sink)
        except _BodyBroken as exc:
            return exc.text
        return None

    async def close(self) -> None:
        self._stream.close()


class _H11Response(_Response):
    """A response h11 framed: its body as h11 hands it out."""

    __slots__ = ("_h11",)

    def __init__(
        self, h: h11.Connection, stream: _Stream, status: int, headers: list[tuple[bytes, bytes]]
    ) -> None:
        super().__init__(stream, status, headers)
        self._h11 = h

    async def body_chunks(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        """httpcore's _receive_response_body: Data until EndOfMessage (or PAUSED)."""
        while True:
            event = await _next_event(self._h11, self._stream)
            if type(event) is h11.Data:
                yield bytes(event.data)
            elif type(event) is h11.EndOfMessage or event is h11.PAUSED:
                return


class _PlainResponse(_Response):
    """A response whose head `_plain_head` read: its body framed by Content-Length, or by the
    end of the connection when it has none, exactly as h11's ContentLengthReader and
    Http10Reader frame it (chunked bodies never get here)."""

    __slots__ = ("_length", "_rest")

    def __init__(
        self,
        stream: _Stream,
        status: int,
        headers: list[tuple[bytes, bytes]],
        rest: bytes,
        length: int | None,
    ) -> None:
        super().__init__(stream, status, headers)
        self._rest = rest
        self._length = length

    async def body_chunks(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        remaining, data = self._length, self._rest
        while True:
            if data:
                if remaining is None:
                    yield data
                else:
                    # bytes past Content-Length are never part of the body
                    piece = data[:remaining]
                    remaining -= len(piece)
                    yield piece
            if remaining == 0:
                return
            data = await self._stream.recv()
            if not data:
                if remaining is not None:
                    # h11's ContentLengthReader.read_eof; the caller reports "unexpected EOF"
                    raise h11.RemoteProtocolError("peer closed connection before the body ended")
                return


# What `_plain_head` reads itself: a strict subset of what h11 accepts, where the two cannot
# differ. HTTP/1.0 or 1.1, a reason of printable ASCII; header names of token characters, values
# of printable ASCII (h11 also allows tabs inside and bytes over 0x7e), CR LF line ends only.
_PLAIN_STATUS = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: [\x20-\x7e]*)?")
_PLAIN_FIELD = re.compile(
    rb"([-!#$%&'*+.^_`|~0-9A-Za-z]+):[ \t]*([\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?[ \t]*"
)
_PLAIN_LENGTH = re.compile(rb"[0-9]{1,18}")
_HEAD_END = b"\r\n\r\n"


def _plain_head(
    data: bytes,
) -> tuple[int, list[tuple[bytes, bytes]], bytes, int | None] | None:
    """The common response, read without h11: (status, headers, body bytes so far, Content-Length
    or None), when `data` (the first read) holds a whole head that h11 would read the same way
    and frame by Content-Length or by the connection's end. None for anything else: no whole head
    yet, a status under 200, 204 or 304, Transfer-Encoding, several Content-Lengths, a tab,
    obs-fold, a bare CR or LF, bytes over 0x7e, anything h11 might reject. The caller then gives
    h11 the same bytes from the start, so h11 alone decides every case but the plain one.

    Why: h11's event objects and state machine were a quarter of the engine's CPU per HTTP
    attempt; the plain case is nearly every probe. `tests/probe/test_http_lean_plain.py` holds
    the two readings identical, response by response and split at every byte.
    """
    end = data.find(_HEAD_END)
    if end < 0:
        return None
    head = data[:end]
    crlf = head.count(b"\r\n")
    if head.count(b"\r") != crlf or head.count(b"\n") != crlf:
        return None
    lines = head.split(b"\r\n")
    status_line = _PLAIN_STATUS.fullmatch(lines[0])
    if status_line is None:
        return None
    status = int(status_line[1])
    if status < 200 or status == 204 or status == 304:
        return None
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    for line in lines[1:]:
        field = _PLAIN_FIELD.fullmatch(line)
        if field is None:
            return None
        name, value = field[1], field[2] or b""
        lower = name.lower()
        if lower == b"content-length":
            if length is not None or _PLAIN_LENGTH.fullmatch(value) is None:
                return None
            length = int(value)
        elif lower == b"transfer-encoding":
            return None
        headers.append((name, value))
    return status, headers, data[end + 4 :], length


async def _next_event(h: h11.Connection, stream: _Stream) -> h11.Event | type[h11.PAUSED]:
    """httpcore's _receive_event. Raises h11.RemoteProtocolError, OSError, or _Failed("EOF")."""
    while True:
        event = h.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await stream.recv()
        if data == b"" and h.their_state is h11.SEND_RESPONSE:
            # httpcore: "Server disconnected without sending a response", which Go calls EOF
            raise _Failed("EOF")
        h.receive_data(data)


# One hop's request as made before the dial (what fails before the dial fails making it):
# where to dial, the header lines in wire order (Host first), and the request's bytes as h11
# writes them, or h11's complaint about them (raised only once the dial is done, as httpcore
# makes the request after connecting).
_Hop = tuple[_Target, tuple[tuple[bytes, bytes], ...], bytes | str]


def _h11_client(
    target: _Target, lines: tuple[tuple[bytes, bytes], ...]
) -> tuple[h11.Connection, bytes]:
    """An h11 client that has sent this hop's request, and the bytes it wrote for it."""
    # the head gate holds every head to Go's cap; h11's own limit must not refuse first
    h = h11.Connection(our_role=h11.CLIENT, max_incomplete_event_size=MAX_RESPONSE_HEADER_BYTES)
    request = h11.Request(method=b"GET", target=target[3], headers=lines)
    data = h.send(request) + h.send(h11.EndOfMessage())  # type: ignore[operator]
    return h, data


def _prepare(url: str, headers: HeaderMap, host: str) -> _Hop:
    target = _parse(url)
    lines = tuple(wire_headers(url, headers, host))
    try:
        request: bytes | str = _h11_client(target, lines)[1]
    except h11.LocalProtocolError as exc:
        request = str(exc)
    return target, lines, request


@lru_cache(maxsize=32768)
def _first_hop(url: str, spec_headers: tuple[tuple[str, str], ...], kube_version: str) -> _Hop:
    """The first hop of a probe, the same every period: made once and kept."""
    headers = header_map(spec_headers, kube_version)
    return _prepare(url, headers, custom_host(headers))


def _spec_key(headers: SpecHeaders) -> tuple[tuple[str, str], ...]:
    return tuple((h.name, h.value) if isinstance(h, HTTPHeader) else (h[0], h[1]) for h in headers)


class _Hops:
    """The exchange's hops for one attempt: each dialled, sent and read here, under the
    attempt's deadline; every stream opened goes into `streams`, for the attempt to close."""

    __slots__ = ("_deadline", "_kube_version", "_spec_headers", "_streams")

    def __init__(
        self,
        spec_headers: tuple[tuple[str, str], ...],
        kube_version: str,
        deadline: _Deadline,
        streams: list[_Stream],
    ) -> None:
        self._spec_headers = spec_headers
        self._kube_version = kube_version
        self._deadline = deadline
        self._streams = streams

    def header_map(self) -> HeaderMap:
        return header_map(self._spec_headers, self._kube_version)

    async def send(self, url: str, headers: HeaderMap | None, host: str) -> _Response:
        """Dial, send the request, read the response head (httpcore's order of failures)."""
        if headers is None:
            hop = _first_hop(url, self._spec_headers, self._kube_version)
        else:
            hop = _prepare(url, headers, host)
        target, lines, request = hop
        stream = await _connect(target[0], target[1], target[2], self._deadline)
        self._streams.append(stream)
        if isinstance(request, str):
            raise _Failed(request)
        # httpcore reads on after a write error: the server may have answered already
        with contextlib.suppress(OSError):
            await stream.send(request)
        return await _receive(stream, target, lines)


async def _receive(
    stream: _Stream, target: _Target, lines: tuple[tuple[bytes, bytes], ...], plain: bool = True
) -> _Response:
    """The response head: read by `_plain_head` when it can, else by h11 from the first byte.
    `plain=False` always uses h11 (the tests compare the two)."""
    try:
        first = await stream.recv()
    except OSError as exc:
        raise _Failed(_read_error(exc, stream)) from None
    if not first:
        # httpcore: "Server disconnected without sending a response", which Go calls EOF
        raise _Failed("EOF")
    head = _plain_head(first) if plain else None
    if head is not None:
        return _PlainResponse(stream, *head)
    # Go reads the rest of this head its own way (see response_head.HeadGate); h11 gets it
    # once read
    gate = HeadGate()
    try:
        data = gate.feed(first)
        while data is None:
            try:
                more = await stream.recv()
            except OSError as exc:
                gate.broken_off()
                raise _Failed(_read_error(exc, stream)) from None
            data = gate.feed(more)
    except GoError as exc:
        raise _Failed(str(exc)) from None
    h = _h11_client(target, lines)[0]
    h.receive_data(data)
    try:
        while True:
            event = await _next_event(h, stream)
            if type(event) is h11.Response:
                break
            if type(event) is h11.InformationalResponse and event.status_code == 101:
                break
    except h11.RemoteProtocolError as exc:
        raise _Failed(head_error(str(exc))) from None
    except OSError as exc:
        raise _Failed(_read_error(exc, stream)) from None
    return _H11Response(h, stream, event.status_code, event.headers.raw_items())


async def _read_at_most(response: _Response, limit: int, sink: bytearray) -> None:
    """The exchange's `read_at_most` over this body; raises `_BodyBroken` where it breaks off."""
    try:
        await read_at_most(response.body_chunks(), limit, sink)
    except h11.RemoteProtocolError:
        raise _BodyBroken("unexpected EOF") from None
    except _Failed as exc:
        raise _BodyBroken(exc.detail) from None
    except OSError as exc:
        raise _BodyBroken(_read_error(exc, response._stream)) from None


async def probe(
    url: str,
    headers: SpecHeaders = (),
    timeout: float = 1.0,
    *,
    follow_non_local_redirects: bool = False,
    kube_version: str = DEFAULT_KUBE_VERSION,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Attempt:
    """One HTTP probe attempt, exactly as `probetui.probe.http.probe` makes it (same arguments,
    same Attempt); see that function for what each argument means. `loop`: the running loop,
    when the caller has it at hand (saves looking it up)."""
    progress = Progress(url)
    streams: list[_Stream] = []
    timed_out = False
    started_at = time.time()
    start = time.monotonic()
    deadline = _Deadline(loop or asyncio.get_running_loop(), timeout)
    expired = False
    try:
        try:
            hops = _Hops(_spec_key(headers), kube_version, deadline, streams)
            outcome = await exchange(hops, url, follow_non_local_redirects, progress)
        finally:
            expired = deadline.disarm()
    except (asyncio.CancelledError, _DialTimeout) as exc:
        # _DialTimeout: the dial's own clock ran out a hair before the deadline's; one event
        if isinstance(exc, asyncio.CancelledError) and not expired:
            raise
        outcome, timed_out = progress.timed_out(), True
    finally:
        latency = time.monotonic() - start
        for stream in streams:
            stream.close()
    return progress.attempt(url, outcome, latency, started_at, timed_out)


__all__ = ["probe"]
