"""Runs one HTTP probe attempt, `pkg/probe/http` (docs/kubelet-behaviour.md §13), on httpx: the
tests' oracle, the reference the product's handler (`probetui.probe.http_lean`) is held to.

It is not part of the product: `tests/probe/test_http_lean.py` and
`tests/probe/test_http_lean_plain.py` compare the lean handler's Attempts with its own, and
`benchmarks.engine --impl httpx` measures it in the lean handler's place.

One attempt is one GET, on a new connection per request, with the kubelet's headers, redirect
policy, 10 KiB body cap and one overall deadline. Transport errors are reported in the words
Go's `net/http` client uses, because those words are what the kubelet puts in its events.

What both handlers share lives in modules of its own: the URL (`url`), the request's headers
(`request`), the redirect policy (`redirect`), Go's reading of a response head
(`response_head`), the redirect loop and the body reading (`exchange`), and Go's texts
(`gotext`). This module is httpx under them: the transport, the head gate on httpcore's reads,
and Go's words for httpx's errors. `format_url`, `build_headers`, `canonical_header_key` and
`classify` are imported here too, as the handler's public face.
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
import time
from dataclasses import dataclass
from typing import Any

# httpx imports httpcore lazily; importing it here keeps that out of a first attempt's latency
import httpcore
import httpx

from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt
from probetui.probe.exchange import Progress, classify, exchange, read_at_most, tls_context
from probetui.probe.gotext import (
    MAX_RESPONSE_HEADER_BYTES,
    NO_SUCH_HOST,
    GoError,
    conn_addresses,
    dns_error,
    head_error,
    join_host_port,
    op_error,
    stream_error,
    syscall_error,
    tls_error,
    unsupported_scheme,
)
from probetui.probe.request import (
    HeaderMap,
    SpecHeaders,
    build_headers,
    canonical_header_key,
    custom_host,
    header_map,
    wire_headers,
)
from probetui.probe.response_head import HeadGate
from probetui.probe.url import dial_addr, format_url, hostname

__all__ = ["build_headers", "canonical_header_key", "classify", "format_url", "probe"]

# `HeadGate` holds every head to Go's cap, MAX_RESPONSE_HEADER_BYTES, before h11 sees it; h11's
# own limit (httpcore's is 100 KiB) must not refuse first. httpcore has no per-connection
# setting, and nothing else in probetui uses httpcore, so the reference raises it for the process.
httpcore.AsyncHTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE = MAX_RESPONSE_HEADER_BYTES

_CONNECT_CALL = re.compile(r"Connect call failed \('([^']*)', (\d+)")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


@dataclass(slots=True)
class _Conn:
    """A hop's socket addresses, for Go's `read tcp local->remote` texts.

    Read as soon as the connection is up: by the time a read fails, asyncio has closed the
    socket.
    """

    connected: bool = False
    addresses: str = ""

    async def trace(self, name: str, info: dict[str, Any]) -> None:
        if name == "connection.connect_tcp.complete":
            self.connected = True
            try:
                sock = info["return_value"].get_extra_info("socket")
                self.addresses = conn_addresses(sock.getsockname(), sock.getpeername())
            except (OSError, KeyError, AttributeError):
                pass
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            # the stream httpcore reads the response from: the TLS one replaces the TCP one
            stream = info.get("return_value")
            if stream is not None:
                _gate_reads(stream)


def _gate_reads(stream: Any) -> None:
    """Put an httpcore network stream's reads through a `HeadGate`: httpcore's h11 gets the
    head only once Go would have read it, and a read Go would refuse raises `GoError`."""
    gate = HeadGate()
    read = stream.read

    async def gated_read(max_bytes: int, timeout: float | None = None) -> bytes:
        data = await read(max_bytes, timeout)
        while (out := gate.feed(data)) is None:
            try:
                data = await read(max_bytes, timeout)
            except Exception:
                gate.broken_off()
                raise
        return out

    stream.read = gated_read


def _describe(exc: BaseException, url: str, conn: _Conn) -> str:
    """The part of Go's client error after `Get "<url>": `."""
    chain = _chain(exc)
    message = str(exc)
    if isinstance(exc, httpx.UnsupportedProtocol):
        return unsupported_scheme(url.partition(":")[0])
    if isinstance(exc, httpx.RemoteProtocolError):
        if message.startswith("Server disconnected without sending a response"):
            # the gate takes every end after a first byte: this one came before any
            return "EOF"
        return head_error(message)
    for err in chain:
        if isinstance(err, socket.gaierror):
            host = hostname(url)
            if err.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)):
                return op_error("dial", "", dns_error(host, NO_SUCH_HOST))
            return op_error("dial", "", dns_error(host, str(err.strerror or err)))
        if isinstance(err, ssl.SSLError):
            return tls_error(err)
    for err in chain:
        if isinstance(err, OSError) and err.errno is not None:
            if isinstance(exc, httpx.ConnectError) and not conn.connected:
                match = _CONNECT_CALL.search(str(err))
                addr = join_host_port(match[1], match[2]) if match else dial_addr(url)
                return op_error("dial", addr, syscall_error("connect", err.errno))
            op = "write" if isinstance(exc, httpx.WriteError) else "read"
            return stream_error(op, conn.addresses, err.errno)
    if isinstance(exc, httpx.ConnectError):
        return op_error("dial", dial_addr(url), f"connect: {message}")
    return message or type(exc).__name__


def _body_error(exc: BaseException, conn: _Conn) -> str:
    """The error ioutil.ReadAll returns when the body breaks off (a prober error path)."""
    if isinstance(exc, httpx.RemoteProtocolError):
        return "unexpected EOF"
    for err in _chain(exc):
        if isinstance(err, ssl.SSLError):
            return tls_error(err)
        if isinstance(err, OSError) and err.errno is not None:
            return stream_error("read", conn.addresses, err.errno)
    return str(exc) or type(exc).__name__


# DisableKeepAlives: nothing is pooled, and no cap on connections, as Go's transport has none
_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=0)


def _transport() -> httpx.AsyncHTTPTransport:
    # A transport per attempt keeps its pool at one connection, so nothing is shared between
    # attempts and no pool bookkeeping grows with the number of probes in flight. Proxies are a
    # client feature in httpx, so the bare transport already ignores http_proxy and friends.
    return httpx.AsyncHTTPTransport(verify=tls_context(), trust_env=False, limits=_LIMITS)


class _Answer:
    """One hop's httpx response, as the exchange reads it."""

    __slots__ = ("_conn", "_response", "status_code")

    def __init__(self, response: httpx.Response, conn: _Conn) -> None:
        self._response = response
        self._conn = conn
        self.status_code = response.status_code

    def header_values(self, name: bytes) -> list[str]:
        return self._response.headers.get_list(name.decode("ascii"))

    async def read_at_most(self, limit: int, sink: bytearray) -> str | None:
        try:
            await read_at_most(self._response.stream, limit, sink)
        except (httpx.TransportError, OSError) as exc:
            return _body_error(exc, self._conn)
        return None

    async def close(self) -> None:
        await self._response.aclose()


class _Hops:
    """The exchange's hops on one httpx transport, each on a connection of its own."""

    __slots__ = ("_headers", "_transport")

    def __init__(self, transport: httpx.AsyncHTTPTransport, headers: HeaderMap) -> None:
        self._transport = transport
        self._headers = headers

    def header_map(self) -> HeaderMap:
        return self._headers

    async def send(self, url: str, headers: HeaderMap | None, host: str) -> _Answer:
        if headers is None:
            headers, host = self._headers, custom_host(self._headers)
        conn = _Conn()
        try:
            response = await self._send(url, headers, host, conn)
        except (httpx.TransportError, OSError) as exc:
            raise GoError(_describe(exc, url, conn)) from None
        return _Answer(response, conn)

    async def _send(self, url: str, headers: HeaderMap, host: str, conn: _Conn) -> httpx.Response:
        lines = wire_headers(url, headers, host)
        try:
            request = httpx.Request("GET", url, headers=lines, extensions={"trace": conn.trace})
        except httpx.InvalidURL as exc:
            raise GoError(str(exc)) from exc
        return await self._transport.handle_async_request(request)


async def probe(
    url: str,
    headers: SpecHeaders = (),
    timeout: float = 1.0,
    *,
    follow_non_local_redirects: bool = False,
    kube_version: str = DEFAULT_KUBE_VERSION,
) -> Attempt:
    """One HTTP probe attempt (`httpProber.Probe` + `DoHTTPProbe`, §13).

    `url` comes from `format_url`. `headers` are the probe spec's httpHeaders as written
    ((name, value) pairs or model HTTPHeader), not `build_headers` output. `timeout` is the
    whole attempt's deadline in seconds (connect, redirects and body), as `http.Client.Timeout`
    is; 0 or less means none, as in Go.
    """
    transport = _transport()
    progress = Progress(url)
    timed_out = False
    started_at = time.time()
    start = time.monotonic()
    try:
        async with asyncio.timeout(timeout if timeout > 0 else None) as deadline:
            hops = _Hops(transport, header_map(headers, kube_version))
            outcome = await exchange(hops, url, follow_non_local_redirects, progress)
    except TimeoutError:
        if not deadline.expired():
            raise
        outcome, timed_out = progress.timed_out(), True
    finally:
        latency = time.monotonic() - start
        await transport.aclose()
    return progress.attempt(url, outcome, latency, started_at, timed_out)
