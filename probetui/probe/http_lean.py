"""Run the HTTP probe handler, `pkg/probe/http` (docs/kubelet-behaviour.md §13), on raw sockets.

It is the lean one: raw asyncio sockets and h11.

The same attempt as the tests' oracle on httpx (`tests/probe/http_oracle.py`), at a fraction
of its CPU:
one GET on a new connection per hop, the kubelet's headers, redirect policy, 10 KiB body cap
and one overall deadline, and Go's words for every error. The request and response are framed
by h11, the parser httpcore uses under httpx, so both handlers accept and reject the same
bytes; before h11, a response head goes through `probetui.probe.response_head`'s gate, Go's own
reading of a head (the status line alone and first, at most 10 MiB, textproto's header-line
rules), so what Go refuses is refused in Go's words. The request's bytes are made by h11 once
per probe and kept; the common response (a whole head in the first read, plain ASCII, framed by
one Content-Length or by the close), which Go reads as it is, is read by `_plain_head` without
h11's objects, and anything else goes through the gate to h11 from its first byte
(`tests/probe/test_http_lean_plain.py` holds its answers to the oracle's, byte case by byte
case). The header map, the wire header order, the head gate, the redirect loop, the body reading
and the error texts come from the modules the oracle shares (`url`, `request`, `redirect`,
`response_head`, `exchange`, `gotext`); this one is the transport under them, and
`probetui.probe.lean_conn` its connection. `tests/probe/test_http_lean.py` runs the oracle's
test vectors against both and compares every field of the Attempt.

What it leaves out is httpx's machinery for a general client (request and response objects, a
connection pool, anyio task groups, trace hooks): a probe needs a socket, one request, and the
head and first 10 KiB of one response.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from functools import lru_cache
from typing import Any

import h11

# the URL's parts come from httpx's parser, so the request target matches the reference's byte
# for byte; parsed once per URL and cached, it costs nothing per attempt
import httpx

from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt
from probetui.probe.exchange import Hops as ExchangeHops
from probetui.probe.exchange import Progress, exchange, read_at_most
from probetui.probe.gotext import (
    MAX_RESPONSE_HEADER_BYTES,
    GoError,
    head_error,
    unsupported_scheme,
)
from probetui.probe.lean_conn import Deadline, DialTimeout, Stream, connect, read_error
from probetui.probe.request import HeaderMap, SpecHeaders, custom_host, header_map, wire_headers
from probetui.probe.response_head import HeadGate
from probetui.spec.model import HTTPHeader


class _Failed(GoError):
    """Signals that a hop failed before its response head arrived; `detail` follows
    `Get "<url>": `."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class _BodyBroken(Exception):
    """Signals that the body broke off after the head; `text` is what ioutil.ReadAll would
    return."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


# What httpx makes of a URL: scheme, host (no IPv6 brackets, IDNA-encoded), port, and the
# request target (path and query, as the request line carries it). A plain tuple of strings,
# bytes and ints, like everything cached here: the cyclic garbage collector stops tracking such
# tuples, so a cluster's worth of cached URLs adds nothing to its full collections.
_Target = tuple[str, str, int, bytes]


@lru_cache(maxsize=32768)
def parse_url(url: str) -> _Target:
    """The URL as httpx reads it: scheme, host, port and request target; raises `GoError`."""
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


class _Response:
    """Holds one hop's response head; `body_chunks()` hands out its body."""

    __slots__ = ("_stream", "headers", "status_code")

    def __init__(self, stream: Stream, status: int, headers: list[tuple[bytes, bytes]]) -> None:
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
    """Holds a response h11 framed: its body as h11 hands it out."""

    __slots__ = ("_h11",)

    def __init__(
        self, h: h11.Connection, stream: Stream, status: int, headers: list[tuple[bytes, bytes]]
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
    """Holds a response whose head `_plain_head` read: its body framed by Content-Length, or by the
    end of the connection when it has none, exactly as h11's ContentLengthReader and
    Http10Reader frame it (chunked bodies never get here)."""

    __slots__ = ("_length", "_rest")

    def __init__(
        self,
        stream: Stream,
        status: int,
        headers: list[tuple[bytes, bytes]],
        rest: bytes,
        length: int | None,
    ) -> None:
        super().__init__(stream, status, headers)
        self._rest = rest
        self._length = length

    async def read_at_most(self, limit: int, sink: bytearray) -> str | None:
        length = self._length
        if length is not None and len(self._rest) >= length:
            # the whole body came with the head, as for nearly every probe: what `body_chunks`
            # would hand out, without its generator and reads (benchmarks.blackbox guards it)
            sink += self._rest[:length][: limit - len(sink)]
            return None
        return await super().read_at_most(limit, sink)

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


# Heads `_plain_head` read, by their bytes: a steady server sends the same head again and
# again (its Date changes once a second), and reading one costs more than looking it up
# (benchmarks.blackbox guards it). Bounded: entries and the bytes of each head.
_HEADS: dict[bytes, tuple[int, tuple[tuple[bytes, bytes], ...], int | None] | None] = {}
_HEADS_MAX = 256
_HEAD_BYTES = 2048


def _plain_head(
    data: bytes,
) -> tuple[int, list[tuple[bytes, bytes]], bytes, int | None] | None:
    """The common response, read without h11: (status, headers, body bytes so far, Content-Length
    or None), when `data` (the first read) holds a whole head that h11 would read the same way
    and frame by Content-Length or by the connection's end. None for anything else: no whole head
    yet, a status under 200, 204 or 304, Transfer-Encoding, several Content-Lengths, a tab,
    obs-fold, a bare CR or LF, bytes over 0x7e, anything h11 might reject. The caller then gives
    h11 the same bytes from the start, so h11 alone decides every case but the plain one.

    Why: h11's event objects and state machine are a large share of the engine's CPU per HTTP
    attempt (guarded by benchmarks/engine.py), and the plain case is nearly every probe.
    `tests/probe/test_http_lean_plain.py` holds
    this handler's attempts identical to the httpx handler's on the same bytes, response by
    response and split at every byte.
    """
    end = data.find(_HEAD_END)
    if end < 0:
        return None
    head = data[:end]
    try:
        known = _HEADS[head]
    except KeyError:
        known = _read_plain_head(head)
        if end <= _HEAD_BYTES:
            if len(_HEADS) >= _HEADS_MAX:
                _HEADS.clear()
            _HEADS[head] = known
    if known is None:
        return None
    status, headers, length = known
    return status, list(headers), data[end + 4 :], length


def _read_plain_head(head: bytes) -> tuple[int, tuple[tuple[bytes, bytes], ...], int | None] | None:
    """`_plain_head`'s reading of a whole head (without its blank line): (status, headers,
    Content-Length or None), or None."""
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
    return status, tuple(headers), length


async def _next_event(h: h11.Connection, stream: Stream) -> h11.Event | type[h11.PAUSED]:
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
    target = parse_url(url)
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


def spec_key(headers: SpecHeaders) -> tuple[tuple[str, str], ...]:
    return tuple((h.name, h.value) if isinstance(h, HTTPHeader) else (h[0], h[1]) for h in headers)


class Hops:
    """Makes the exchange's hops for one attempt: each dialled, sent and read here, under the
    attempt's deadline; every stream opened goes into `streams`, for the attempt to close."""

    __slots__ = ("_deadline", "_kube_version", "_spec_headers", "_streams", "_tls")

    def __init__(
        self,
        spec_headers: tuple[tuple[str, str], ...],
        kube_version: str,
        deadline: Deadline,
        streams: list[Stream],
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._spec_headers = spec_headers
        self._kube_version = kube_version
        self._deadline = deadline
        self._streams = streams
        # the TLS configuration of an https hop: the kubelet transport's unless given
        self._tls = tls

    def header_map(self) -> HeaderMap:
        return header_map(self._spec_headers, self._kube_version)

    async def send(self, url: str, headers: HeaderMap | None, host: str) -> _Response:
        """Dial, send the request, read the response head (httpcore's order of failures)."""
        if headers is None:
            hop = _first_hop(url, self._spec_headers, self._kube_version)
        else:
            hop = _prepare(url, headers, host)
        target, lines, request = hop
        stream = await connect(target[0], target[1], target[2], self._deadline, self._tls)
        self._streams.append(stream)
        if isinstance(request, str):
            raise _Failed(request)
        # httpcore reads on after a write error: the server may have answered already (a
        # try, not contextlib.suppress: its object and calls on every attempt)
        try:  # noqa: SIM105
            await stream.send(request)
        except OSError:
            pass
        # the response head: read by `_plain_head` when it can, else by h11 from the first
        # byte; its first read waits here, not in a coroutine of its own (every coroutine
        # between the task and the socket runs again on each wake; benchmarks.blackbox
        # guards it)
        try:
            first = await stream.recv()
        except OSError as exc:
            raise _Failed(read_error(exc, stream)) from None
        if not first:
            # httpcore: "Server disconnected without sending a response", which Go calls EOF
            raise _Failed("EOF")
        head = _plain_head(first)
        if head is not None:
            return _PlainResponse(stream, *head)
        return await _h11_head(stream, first, target, lines)


async def _h11_head(
    stream: Stream, first: bytes, target: _Target, lines: tuple[tuple[bytes, bytes], ...]
) -> _Response:
    """A response head `_plain_head` left to h11, `first` its first read."""
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
                raise _Failed(read_error(exc, stream)) from None
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
        raise _Failed(read_error(exc, stream)) from None
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
        raise _BodyBroken(read_error(exc, response._stream)) from None


def probe(
    url: str,
    headers: SpecHeaders = (),
    timeout: float = 1.0,
    *,
    follow_non_local_redirects: bool = False,
    kube_version: str = DEFAULT_KUBE_VERSION,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Coroutine[Any, Any, Attempt]:
    """Runs one HTTP probe attempt (`httpProber.Probe` + `DoHTTPProbe`, §13).

    `url` comes from `format_url`. `headers` are the probe spec's httpHeaders as written
    ((name, value) pairs or model HTTPHeader), not `build_headers` output. `timeout` is the
    whole attempt's deadline in seconds (connect, redirects and body), as `http.Client.Timeout`
    is; 0 or less means none, as in Go. `loop`: the running loop, when the caller has it at
    hand (saves looking it up).

    `run_attempt`'s own coroutine, not one awaiting it: every coroutine between the task and
    the socket runs again on each wake (benchmarks.blackbox guards it).
    """
    key = spec_key(headers) if headers else ()
    return run_attempt(
        url,
        lambda deadline, streams: Hops(key, kube_version, deadline, streams),
        timeout,
        follow_non_local_redirects,
        loop,
        lazy_deadline=True,
    )


async def run_attempt(
    url: str,
    make_hops: Callable[[Deadline, list[Stream]], ExchangeHops],
    timeout: float,
    follow_non_local_redirects: bool,
    loop: asyncio.AbstractEventLoop | None,
    *,
    lazy_deadline: bool = False,
) -> Attempt:
    """One attempt of `exchange` over the hops `make_hops` gives, under one deadline of
    `timeout` seconds (`http.Client.Timeout`): every stream the hops open goes into the list
    they are given and is closed when the attempt ends. `lazy_deadline`: the hops wait only
    through `lean_conn`'s dial and `Stream`, which arm the deadline before each wait (see
    `Deadline`)."""
    progress = Progress(url)
    streams: list[Stream] = []
    timed_out = False
    started_at = time.time()
    start = time.monotonic()
    deadline = Deadline(loop or asyncio.get_running_loop(), timeout, lazy=lazy_deadline)
    expired = False
    try:
        try:
            outcome = await exchange(
                make_hops(deadline, streams), url, follow_non_local_redirects, progress
            )
        finally:
            expired = deadline.disarm()
    except (asyncio.CancelledError, DialTimeout) as exc:
        # DialTimeout: the dial's own clock ran out a hair before the deadline's; one event
        if isinstance(exc, asyncio.CancelledError) and not expired:
            raise
        outcome, timed_out = progress.timed_out(), True
    finally:
        latency = time.monotonic() - start
        for stream in streams:
            stream.close()
    return progress.attempt(url, outcome, latency, started_at, timed_out)


__all__ = ["Hops", "parse_url", "probe", "run_attempt", "spec_key"]
