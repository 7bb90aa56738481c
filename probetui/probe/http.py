"""HTTP probe handler, `pkg/probe/http` (docs/kubelet-behaviour.md §13).

One attempt is one GET, on a new connection per request, with the kubelet's headers, redirect
policy, 10 KiB body cap and one overall deadline. Transport errors are reported in the words
Go's `net/http` client uses, because those words are what the kubelet puts in its events.
"""

from __future__ import annotations

import ast
import asyncio
import re
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any
from urllib.parse import urljoin

# httpx imports httpcore lazily; importing it here keeps that out of a first attempt's latency
import httpcore
import httpx

from probetui.probe.base import (
    DEFAULT_KUBE_VERSION,
    MAX_OUTPUT_BYTES,
    Attempt,
    Result,
    decode,
    user_agent,
)
from probetui.probe.gotext import (
    HEADERS_TOO_LARGE,
    MAX_RESPONSE_HEADER_BYTES,
    NO_SUCH_HOST,
    TIMEOUT_AWAITING_HEADERS,
    TIMEOUT_READING_BODY,
    TOO_MANY_REDIRECTS,
    TRANSPORT_BROKEN,
    dns_error,
    go_quote,
    http_redirect_warning,
    http_status_failed,
    join_host_port,
    op_error,
    syscall_error,
    url_error,
)
from probetui.spec.model import HTTPHeader

# RedirectChecker / defaultCheckRedirect: a chain may hold at most this many requests
MAX_REDIRECT_REQUESTS = 10
# net/http redirectBehavior: only these codes are followed; other 3xx codes are final
_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
# net/http Client.do reads this much of a redirect body before closing it
_REDIRECT_DRAIN_BYTES = 2 << 10
# net/http Request.write sends these from fields of the request, never from the header map
_NOT_FROM_MAP = frozenset({"Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer"})
# net/http shouldCopyHeaderOnRedirect: only sent on to the same domain or a subdomain
_SENSITIVE = frozenset({"Authorization", "Www-Authenticate", "Cookie", "Cookie2"})
_GO_DEFAULT_USER_AGENT = "Go-http-client/1.1"

# `_HeadGate` holds every head to Go's cap, MAX_RESPONSE_HEADER_BYTES, before h11 sees it; h11's
# own limit (httpcore's is 100 KiB) must not refuse first. httpcore has no per-connection setting, and nothing else in
# probetui uses httpcore, so the reference raises it for the process.
httpcore.AsyncHTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE = MAX_RESPONSE_HEADER_BYTES

# Go http.Header keys are kept in insertion order here; the wire order is Go's sorted order.
HeaderMap = dict[str, list[str]]


# ---------------------------------------------------------------------------------------------
# URL (request.go formatURL, with the parts of Go's net/url it depends on)

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_UNRESERVED = _ALNUM | frozenset("-_.~")
# unescaped in each part by Go's url.shouldEscape
_PATH_SAFE = _UNRESERVED | frozenset("$&+,/:;=@")
_FRAGMENT_SAFE = _UNRESERVED | frozenset("$&+,/:;=?@!()*")
_HOST_SAFE = _UNRESERVED | frozenset("!$&'()*+,;=:[]<>\"")
# url.validEncoded also accepts these as already encoded
_VALID_ENCODED_EXTRA = frozenset("!$&'()*+,;=:@[]%")
_CTL_BYTE = re.compile(r"[\x00-\x1f\x7f]")
_HEX = frozenset("0123456789abcdefABCDEF")


class _URLError(ValueError):
    pass


def _as_bytes_str(text: str) -> str:
    # Go strings are bytes: work on one code point per UTF-8 byte
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def _unescape(s: str) -> str:
    if "%" not in s:
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        if s[i] == "%":
            pair = s[i + 1 : i + 3]
            if len(pair) < 2 or pair[0] not in _HEX or pair[1] not in _HEX:
                raise _URLError(f"invalid URL escape {go_quote(s[i : i + 3])}")
            out.append(chr(int(pair, 16)))
            i += 3
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def _escape(s: str, safe: frozenset[str]) -> str:
    return "".join(c if c in safe else f"%{ord(c):02X}" for c in s)


def _valid_encoded(s: str, safe: frozenset[str]) -> bool:
    return all(c in safe or c in _VALID_ENCODED_EXTRA for c in s)


@dataclass(slots=True)
class _GoURL:
    """The fields of Go's url.URL that `formatURL` and `String()` use."""

    scheme: str = ""
    opaque: str = ""
    host: str = ""
    path: str = ""
    raw_path: str = ""
    force_query: bool = False
    raw_query: str = ""
    fragment: str | None = None
    raw_fragment: str = ""

    def escaped_path(self) -> str:
        if (
            self.raw_path
            and _valid_encoded(self.raw_path, _PATH_SAFE)
            and _unescape(self.raw_path) == self.path
        ):
            return self.raw_path
        if self.path == "*":
            return "*"
        return _escape(self.path, _PATH_SAFE)

    def string(self) -> str:
        parts: list[str] = []
        if self.scheme:
            parts += (self.scheme, ":")
        if self.opaque:
            parts.append(self.opaque)
        else:
            path = self.escaped_path()
            if self.scheme or self.host:
                if self.host or path:
                    parts.append("//")
                parts.append(_escape(self.host, _HOST_SAFE))
            if path and path[0] != "/" and self.host:
                parts.append("/")
            parts.append(path)
        if self.force_query or self.raw_query:
            parts += ("?", self.raw_query)
        if self.fragment:
            frag = self.raw_fragment
            if not (
                frag and _valid_encoded(frag, _FRAGMENT_SAFE) and _unescape(frag) == self.fragment
            ):
                frag = _escape(self.fragment, _FRAGMENT_SAFE)
            parts += ("#", frag)
        return "".join(parts).encode("latin-1").decode("utf-8", "surrogateescape")


def _go_scheme(raw: str) -> tuple[str, str]:
    """url.getScheme: (scheme, rest); raises where Go reports a missing scheme."""
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                return "", raw
            continue
        if c == ":":
            if i == 0:
                raise _URLError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw
    return "", raw


def _parse_path(raw: str) -> _GoURL:
    """url.Parse, for the value of httpGet.path."""
    raw = _as_bytes_str(raw)
    rest, has_fragment, frag = raw.partition("#")
    if _CTL_BYTE.search(rest):
        raise _URLError("net/url: invalid control character in URL")
    u = _GoURL()
    if rest == "*":
        u.path = "*"
    elif rest:
        scheme, rest = _go_scheme(rest)
        u.scheme = scheme.lower()
        if rest.endswith("?") and rest.count("?") == 1:
            u.force_query, rest = True, rest[:-1]
        else:
            rest, _, u.raw_query = rest.partition("?")
        if not rest.startswith("/"):
            if u.scheme:
                u.opaque = rest
                rest = ""
            elif ":" in rest.partition("/")[0]:
                raise _URLError("first path segment in URL cannot contain colon")
        if (u.scheme or not rest.startswith("///")) and rest.startswith("//"):
            authority, slash, tail = rest[2:].partition("/")
            _check_authority(authority)
            u.host, rest = authority.rpartition("@")[2], slash + tail
        if rest:
            u.path = _unescape(rest)
            if _escape(u.path, _PATH_SAFE) != rest:
                u.raw_path = rest
    if has_fragment:
        u.fragment = _unescape(frag)
        if _escape(u.fragment, _FRAGMENT_SAFE) != frag:
            u.raw_fragment = frag
    return u


def _check_authority(authority: str) -> None:
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise _URLError("missing ']' in host")
        port = hostport[close + 1 :]
    else:
        colon = hostport.rfind(":")
        port = hostport[colon:] if colon >= 0 else ""
    if port and (port[0] != ":" or not port[1:].isdigit()) and port != ":":
        raise _URLError(f"invalid port {go_quote(port)} after host")


# one entry per probe URL: a cluster's worth of pods must fit, or every attempt misses
@lru_cache(maxsize=32768)
def format_url(scheme: str, host: str, port: int, path: str) -> str:
    """`formatURL`: the probe URL, with Go's parsing of `path` (§13.1, docs/test-vectors.md D6).

    A path Go cannot parse is used as a plain path, as upstream does.
    """
    try:
        u = _parse_path(path)
    except _URLError:
        u = _GoURL(path=_as_bytes_str(path))
    u.scheme = scheme
    u.host = _as_bytes_str(join_host_port(host, port))
    return u.string()


# ---------------------------------------------------------------------------------------------
# Headers (request.go v1HeaderToHTTPHeader, newProbeRequest)


def canonical_header_key(name: str) -> str:
    """Go's `http.CanonicalHeaderKey` (vector D7)."""
    if not name or any(c not in _TCHAR for c in name):
        # Go leaves keys with a space or any other non-token byte as written
        return name
    out: list[str] = []
    upper = True
    for c in name:
        out.append(c.upper() if upper else c.lower())
        upper = c == "-"
    return "".join(out)


SpecHeaders = Sequence[tuple[str, str] | HTTPHeader]


def _header_map(spec_headers: SpecHeaders, kube_version: str) -> HeaderMap:
    headers: HeaderMap = {}
    for item in spec_headers:
        name, value = (item.name, item.value) if isinstance(item, HTTPHeader) else item
        headers.setdefault(canonical_header_key(name), []).append(value)
    if "User-Agent" not in headers:
        headers["User-Agent"] = [user_agent(kube_version)]
    accept = headers.get("Accept")
    if accept is None:
        headers["Accept"] = ["*/*"]
    elif accept[0] == "":
        # Header.Get looks at the first value only; Del removes them all
        del headers["Accept"]
    return headers


def build_headers(
    spec_headers: SpecHeaders, *, kube_version: str = DEFAULT_KUBE_VERSION
) -> list[tuple[str, str]]:
    """The request's header map as (name, value) pairs (§13.2-13.4, vectors D7, D8).

    Names are canonicalised and repeated names keep every value. User-Agent defaults to
    `kube-probe/<major>.<minor>` and Accept to `*/*`; an empty Accept is removed. An empty
    User-Agent is left out here: Go keeps it in the map but then sends no User-Agent at all.
    """
    headers = _header_map(spec_headers, kube_version)
    return [
        (name, value)
        for name, values in headers.items()
        if not (name == "User-Agent" and values[0] == "")
        for value in values
    ]


def _valid_value(value: str) -> bool:
    # httpguts.ValidHeaderFieldValue: no control bytes except tab
    return not any((c < " " and c != "\t") or c == "\x7f" for c in value)


def _trim(value: str) -> str:
    return value.strip(" \t\r\n")


def _has_token(value: str, token: str) -> bool:
    return any(part.strip(" \t").lower() == token for part in value.split(","))


def _wire_headers(headers: HeaderMap, host: str) -> list[tuple[bytes, bytes]]:
    """The header lines Go's Request.write sends, in its order: Host, User-Agent, the rest sorted
    by name, then the transport's `Connection: close` (DisableKeepAlives)."""
    for name, values in headers.items():
        if not name or any(c not in _TCHAR for c in name):
            raise _GoError(f"net/http: invalid header field name {go_quote(name)}")
        if not all(_valid_value(v) for v in values):
            raise _GoError(f"net/http: invalid header field value for {go_quote(name)}")
    if not _valid_host_header(host):
        raise _GoError("http: invalid Host header")
    lines = [(b"Host", _utf8(host))]
    agent = headers["User-Agent"][0] if "User-Agent" in headers else _GO_DEFAULT_USER_AGENT
    if agent:
        lines.append((b"User-Agent", _utf8(_trim(agent))))
    for name in sorted(headers):
        if name not in _NOT_FROM_MAP:
            key = _utf8(name)
            lines.extend((key, _utf8(_trim(v))) for v in headers[name])
    if not _has_token(headers.get("Connection", [""])[0], "close"):
        lines.append((b"Connection", b"close"))
    return lines


_HOST_BYTES = _ALNUM | frozenset("!$%&'()*+,-.:;=[]_~")


def _valid_host_header(host: str) -> bool:
    # httpguts.ValidHostHeader: bytes >= 0x80 pass (IDNA is dealt with elsewhere)
    return all(c in _HOST_BYTES or ord(c) >= 0x80 for c in host)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# Go's words for errors


class _GoError(Exception):
    """An error with the exact text net/http would give."""


def _go_addr(addr: Any) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        return join_host_port(str(addr[0]), addr[1])
    return str(addr)


_CONNECT_CALL = re.compile(r"Connect call failed \('([^']*)', (\d+)")
_STATUS_LINE = re.compile(r"illegal status line: bytearray\(b(['\"])(.*)\1\)$", re.S)


def _bytes_repr(match: re.Match[str]) -> bytes:
    # h11 quotes the line as a bytes repr; turn it back into the bytes Go would quote
    try:
        raw = ast.literal_eval(f"b{match[1]}{match[2]}{match[1]}")
    except (ValueError, SyntaxError):
        raw = None
    return raw if isinstance(raw, bytes) else match[2].encode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# Go's reading of a response head (response.go ReadResponse, textproto readMIMEHeader,
# transport.go readLoop), which both handlers apply before h11 sees the bytes

_ATOI = re.compile(rb"[+-]?[0-9]+")
_GO_HTTP_VERSION = re.compile(rb"HTTP/[0-9]\.[0-9]")
_HEAD_END = re.compile(rb"\n\r?\n")
# canonicalMIMEHeaderKey takes token bytes and, since go.dev/issue/34540, spaces;
# validHeaderValueByte refuses control bytes but the tab
_GO_HEADER_KEY = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z ]+")
_GO_BAD_VALUE_BYTE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


def _status_line_error(line: bytes) -> str | None:
    """ReadResponse's verdict on a status line: its error text, or None where Go reads it.

    The line is cut at its first space into protocol and status; the code is the status up to
    its next space, after leading spaces. The code's length and value are checked before the
    protocol's version, as Go checks them.
    """
    proto, space, status = line.partition(b" ")
    if not space:
        return f"malformed HTTP response {go_quote(line)}"
    code = status.lstrip(b" ").partition(b" ")[0]
    # strconv.Atoi takes a sign; the code must still be 3 bytes and not negative
    if len(code) != 3 or not _ATOI.fullmatch(code) or int(code) < 0:
        return f"malformed HTTP status code {go_quote(code)}"
    if not _GO_HTTP_VERSION.fullmatch(proto):
        return f"malformed HTTP version {go_quote(proto)}"
    return None


def _mime_trim(data: bytes) -> bytes:
    # textproto's trim: spaces and tabs only
    return data.strip(b" \t")


def _mime_header_error(head: bytes) -> str | None:
    """readMIMEHeader over the header lines of `head` (a response head from its status line on):
    Go's error, or None when every line up to the blank line reads. Where `head` stops before
    the blank line the connection ended there, which Go reports as `unexpected EOF` once every
    line before the end has read (ReadResponse turns the EOF into io.ErrUnexpectedEOF).
    """
    pieces = head.split(b"\n")[1:]
    # every piece but the last ended with LF; bufio hands out a line the end cut off as it is
    lines = [p[:-1] if p.endswith(b"\r") else p for p in pieces[:-1]]
    if pieces and pieces[-1]:
        lines.append(pieces[-1])
    if lines and lines[0][:1] in (b" ", b"\t"):
        # the first header line may not be a continuation; Go quotes at most 80 bytes of it
        if len(lines[0]) > 80:
            return "message too large"
        return "malformed MIME header initial line: " + decode(lines[0])
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            return None
        if b":" not in line:
            return f"malformed MIME header: missing colon: {go_quote(line)}"
        kv = _mime_trim(line)
        while i < len(lines) and lines[i][:1] in (b" ", b"\t"):
            kv += b" " + _mime_trim(lines[i])
            i += 1
        key, _, value = kv.partition(b":")
        if not _GO_HEADER_KEY.fullmatch(key) or _GO_BAD_VALUE_BYTE.search(value):
            return "malformed MIME header line: " + decode(kv)
    return "unexpected EOF"


class _HeadGate:
    """A response's bytes as Go's transport reads them, held back from h11 until its head ends.

    Go judges the status line alone, as soon as its LF is in (or the connection ends), before it
    reads any header: `malformed HTTP response "..."`, `... status code`, `... version`. It reads
    at most 10 MiB of head, and refuses header lines h11 takes (a DEL in a value) by its own
    rules (`_mime_header_error`); a connection that ends inside the head fails the line it cut
    off, or else reads as `unexpected EOF`. h11 waits for the whole head first, refuses in its
    own words (`illegal request line`, `Receive buffer too long`) and under its own limit, and
    httpcore calls any end inside a head `Server disconnected`. Both handlers feed each
    response's reads through a gate: it raises `_GoError` with Go's text, or hands on the head
    in one piece once it has ended, and everything after that as it comes; h11 is left the
    framing of the body, and the refusals Go would not make (`_head_error`).
    """

    __slots__ = ("_buf", "_line_read", "open")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._line_read = False
        self.open = False

    def feed(self, data: bytes) -> bytes | None:
        """The next read, b"" for the end of the connection. Returns what h11 may have now, or
        None while Go would still be reading the head."""
        if self.open:
            return data
        buf = self._buf
        searched = max(len(buf) - 2, 0)  # a blank line may straddle two reads
        buf += data
        if not self._line_read:
            end = buf.find(b"\n", 0, MAX_RESPONSE_HEADER_BYTES)
            if end < 0:
                if len(buf) >= MAX_RESPONSE_HEADER_BYTES:
                    raise _GoError(TRANSPORT_BROKEN + HEADERS_TOO_LARGE)
                if data:
                    return None
                if not buf:
                    # not a byte came: Go's bare EOF, which the caller reports as ever
                    self.open = True
                    return data
                self._judge(bytes(buf))
                raise _GoError(TRANSPORT_BROKEN + "unexpected EOF")
            line = bytes(buf[:end])
            self._judge(line[:-1] if line.endswith(b"\r") else line)
            self._line_read = True
            searched = 0
        blank = _HEAD_END.search(buf, searched)
        if blank is not None and blank.end() <= MAX_RESPONSE_HEADER_BYTES:
            error = _mime_header_error(bytes(buf[: blank.end()]))
            if error is not None:
                raise _GoError(TRANSPORT_BROKEN + error)
            self.open = True
            self._buf = bytearray()
            return bytes(buf)
        if len(buf) >= MAX_RESPONSE_HEADER_BYTES:
            raise _GoError(TRANSPORT_BROKEN + HEADERS_TOO_LARGE)
        if not data:
            raise _GoError(TRANSPORT_BROKEN + (_mime_header_error(bytes(buf)) or "unexpected EOF"))
        return None

    def broken_off(self) -> None:
        """A read failed: Go judges what it has of the status line before the read's error."""
        if not (self.open or self._line_read) and self._buf:
            self._judge(bytes(self._buf))

    @staticmethod
    def _judge(line: bytes) -> None:
        error = _status_line_error(line)
        if error is not None:
            raise _GoError(TRANSPORT_BROKEN + error)


def _head_error(message: str) -> str:
    """The text (after `Get "<url>": `) for a head that passed the gate but that h11 refused
    with `message`: Go reads such heads, so only the transport's prefix is Go's."""
    if message.startswith("Receive buffer too long"):
        # only a head after a 1xx one gets here, and Go's cap counts both
        return TRANSPORT_BROKEN + HEADERS_TOO_LARGE
    match = _STATUS_LINE.match(message)
    if match:
        # a line Go reads and h11 does not (two spaces, a signed code): Go's nearest words
        return f"{TRANSPORT_BROKEN}malformed HTTP response {go_quote(_bytes_repr(match))}"
    return TRANSPORT_BROKEN + message


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


@dataclass(slots=True)
class _Conn:
    """The current hop's socket addresses, for Go's `read tcp local->remote` texts.

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
                self.addresses = f"{_go_addr(sock.getsockname())}->{_go_addr(sock.getpeername())}"
            except (OSError, KeyError, AttributeError):
                pass
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            # the stream httpcore reads the response from: the TLS one replaces the TCP one
            stream = info.get("return_value")
            if stream is not None:
                _gate_reads(stream)

    def reset(self) -> None:
        self.connected, self.addresses = False, ""


def _gate_reads(stream: Any) -> None:
    """Put an httpcore network stream's reads through a `_HeadGate`: httpcore's h11 gets the
    head only once Go would have read it, and a read Go would refuse raises `_GoError`."""
    gate = _HeadGate()
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


def _socket_error(op: str, err: OSError, conn: _Conn) -> str:
    if err.errno is None:
        return "EOF"
    return op_error(op, conn.addresses, syscall_error(op, err.errno))


def _tls_error(err: ssl.SSLError) -> str:
    reason = (getattr(err, "reason", None) or "").upper()
    if reason in {
        "WRONG_VERSION_NUMBER",
        "RECORD_LAYER_FAILURE",
        "HTTP_REQUEST",
        "PACKET_LENGTH_TOO_LONG",
    }:
        # Nearly always a plain-HTTP port answering a TLS hello; Go sees "HTTP/" and says so
        return "http: server gave HTTP response to HTTPS client"
    if isinstance(err, ssl.SSLEOFError | ssl.SSLZeroReturnError):
        return "EOF"
    if "_ALERT_" in reason:
        # a TLS alert from the server; Go words it "remote error: tls: <alert name>"
        alert = reason.split("_ALERT_", 1)[1].lower().replace("_", " ")
        return f"remote error: tls: {alert}"
    return f"tls: {(reason or str(err)).lower().replace('_', ' ')}"


def _describe(exc: BaseException, url: str, conn: _Conn) -> str:
    """The part of Go's client error after `Get "<url>": `."""
    chain = _chain(exc)
    message = str(exc)
    if isinstance(exc, httpx.UnsupportedProtocol):
        return f"unsupported protocol scheme {go_quote(url.partition(':')[0].lower())}"
    if isinstance(exc, httpx.RemoteProtocolError):
        if message.startswith("Server disconnected without sending a response"):
            # the gate takes every end after a first byte: this one came before any
            return "EOF"
        return _head_error(message)
    for err in chain:
        if isinstance(err, socket.gaierror):
            host = _hostname(url)
            if err.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)):
                return op_error("dial", "", dns_error(host, NO_SUCH_HOST))
            return op_error("dial", "", dns_error(host, str(err.strerror or err)))
        if isinstance(err, ssl.SSLError):
            return _tls_error(err)
    for err in chain:
        if isinstance(err, OSError) and err.errno is not None:
            if isinstance(exc, httpx.ConnectError) and not conn.connected:
                match = _CONNECT_CALL.search(str(err))
                addr = join_host_port(match[1], match[2]) if match else _dial_addr(url)
                return op_error("dial", addr, syscall_error("connect", err.errno))
            op = "write" if isinstance(exc, httpx.WriteError) else "read"
            return _socket_error(op, err, conn)
    if isinstance(exc, httpx.ConnectError):
        return op_error("dial", _dial_addr(url), f"connect: {message}")
    return message or type(exc).__name__


def _body_error(exc: BaseException, conn: _Conn) -> str:
    """The error ioutil.ReadAll returns when the body breaks off (a prober error path)."""
    if isinstance(exc, httpx.RemoteProtocolError):
        return "unexpected EOF"
    for err in _chain(exc):
        if isinstance(err, ssl.SSLError):
            return _tls_error(err)
        if isinstance(err, OSError) and err.errno is not None:
            return _socket_error("read", err, conn)
    return str(exc) or type(exc).__name__


# ---------------------------------------------------------------------------------------------
# URL pieces Go's client compares


_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


def _authority(url: str) -> str:
    """url.URL.Host: host[:port] as written, without userinfo."""
    match = _AUTHORITY.match(url)
    return match[1].rpartition("@")[2] if match else ""


def _hostname(url: str) -> str:
    """url.URL.Hostname(): case kept, port and IPv6 brackets removed."""
    host = _authority(url)
    colon = host.rfind(":")
    if colon >= 0 and _optional_port(host[colon + 1 :]):
        host = host[:colon]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def _optional_port(digits: str) -> bool:
    return digits == "" or (digits.isascii() and digits.isdigit())


def _dial_addr(url: str) -> str:
    """url.URL's host and port, the port defaulted from the scheme (net/http canonicalAddr)."""
    authority = _authority(url)
    colon = authority.rfind(":")
    port = authority[colon + 1 :] if colon >= 0 and "]" not in authority[colon:] else ""
    if not port:
        port = "443" if url[:6].lower() == "https:" else "80"
    return join_host_port(_hostname(url), port)


def _canonical_addr(url: str) -> str:
    return _dial_addr(url).lower()


def _is_domain_or_subdomain(sub: str, parent: str) -> bool:
    if sub == parent:
        return True
    return sub.endswith(parent) and sub[len(sub) - len(parent) - 1 : len(sub) - len(parent)] == "."


def _referer(last: str, new: str) -> str:
    """net/http refererForURL: the previous URL without userinfo, none on https -> http."""
    if last.startswith("https:") and new.startswith("http:"):
        return ""
    match = _AUTHORITY.match(last)
    if match and "@" in match[1]:
        last = last.replace(match[1], match[1].rpartition("@")[2], 1)
    return last


def _is_absolute(location: str) -> bool:
    try:
        return bool(_go_scheme(location)[0])
    except _URLError:
        return False


def _next_hop(
    current: str, location: str, host: str, original_hostname: str, follow_non_local: bool
) -> tuple[str, str] | None:
    """net/http's redirect decision: (URL to follow, Host header to keep), or None when this 3xx
    is the answer (ErrUseLastResponse). An unparsable Location raises `_GoError` with Go's text.
    """
    try:
        target = urljoin(current, location)
    except ValueError:
        # urljoin only refuses an unclosed IPv6 bracket, which Go's url.Parse refuses too
        quoted = go_quote(location)
        raise _GoError(
            f"failed to parse Location header {quoted}: parse {quoted}: missing ']' in host"
        ) from None
    if not follow_non_local and _hostname(target) != original_hostname:
        return None
    # Go keeps a custom Host only when the Location is relative (golang.org/issue/22233)
    keep = host if host and host != _authority(current) and not _is_absolute(location) else ""
    return target, keep


def _redirect_headers(original: HeaderMap, previous: str, target: str) -> HeaderMap:
    """net/http makeHeadersCopier plus the Referer the client sets on each redirect."""
    keep_sensitive = _is_domain_or_subdomain(_canonical_addr(target), _canonical_addr(previous))
    headers = {k: v for k, v in original.items() if keep_sensitive or k not in _SENSITIVE}
    referer = _referer(previous, target)
    if referer:
        headers["Referer"] = [referer]
    return headers


# ---------------------------------------------------------------------------------------------
# The probe


@cache
def _ssl_context() -> ssl.SSLContext:
    # tls.Config{InsecureSkipVerify: true}; Go clients require TLS 1.2 or later by default
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


# DisableKeepAlives: nothing is pooled, and no cap on connections, as Go's transport has none
_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=0)


def _transport() -> httpx.AsyncHTTPTransport:
    # A transport per attempt keeps its pool at one connection, so nothing is shared between
    # attempts and no pool bookkeeping grows with the number of probes in flight. Proxies are a
    # client feature in httpx, so the bare transport already ignores http_proxy and friends.
    return httpx.AsyncHTTPTransport(verify=_ssl_context(), trust_env=False, limits=_LIMITS)


def classify(status_code: int, body: str) -> tuple[Result, str]:
    """DoHTTPProbe's verdict on a response that arrived with its body (§13.8, vector D9)."""
    if 200 <= status_code < 300:
        return Result.SUCCESS, body
    if 300 <= status_code < 400:
        return Result.WARNING, http_redirect_warning(body)
    # the body stays out of the message until issue 99425 is resolved upstream
    return Result.FAILURE, http_status_failed(status_code)


@dataclass(slots=True)
class _Progress:
    """Where the attempt is, so a deadline can be reported the way Go reports it."""

    url: str
    reading_body: bool = False
    status_code: int | None = None
    body: bytearray | None = None


async def _read_at_most(stream: httpx.AsyncByteStream, limit: int, sink: bytearray) -> None:
    """utilio.ReadAtMost: stop as soon as `limit` bytes are in; never read on for the rest."""
    async for chunk in stream:
        sink += chunk[: limit - len(sink)]
        if len(sink) >= limit:
            return


async def _drain(response: httpx.Response) -> None:
    """Client.do: read a little of a redirect's body, ignoring errors, then close it."""
    length = response.headers.get("content-length")
    try:
        if length is None or not length.isdigit() or int(length) <= _REDIRECT_DRAIN_BYTES:
            await _read_at_most(response.stream, _REDIRECT_DRAIN_BYTES, bytearray())
    except (httpx.TransportError, OSError):
        pass
    finally:
        await response.aclose()


async def _send(
    transport: httpx.AsyncHTTPTransport,
    url: str,
    headers: HeaderMap,
    host: str,
    conn: _Conn,
) -> httpx.Response:
    lines = _wire_headers(headers, host or _authority(url))
    try:
        request = httpx.Request("GET", url, headers=lines, extensions={"trace": conn.trace})
    except httpx.InvalidURL as exc:
        raise _GoError(str(exc)) from exc
    return await transport.handle_async_request(request)


async def _exchange(
    transport: httpx.AsyncHTTPTransport,
    url: str,
    headers: HeaderMap,
    follow_non_local_redirects: bool,
    progress: _Progress,
    conn: _Conn,
) -> tuple[Result, str, str | None]:
    """Client.Do with the kubelet's CheckRedirect, then DoHTTPProbe's reading of the answer.

    Returns (result, output, error) the way DoHTTPProbe does.
    """
    original_host = headers["Host"][0] if "Host" in headers else ""
    original_hostname = _hostname(url)
    current, host, hop_headers = url, original_host, headers
    requests = 0
    while True:
        progress.url, progress.status_code = current, None
        try:
            response = await _send(transport, current, hop_headers, host, conn)
        except _GoError as exc:
            return Result.FAILURE, url_error(current, str(exc)), None
        except (httpx.TransportError, OSError) as exc:
            return Result.FAILURE, url_error(current, _describe(exc, current, conn)), None
        requests += 1
        progress.status_code = response.status_code
        locations = response.headers.get_list("location")
        if response.status_code not in _REDIRECT_CODES or not locations or not locations[0]:
            break
        location = locations[0]
        try:
            hop = _next_hop(current, location, host, original_hostname, follow_non_local_redirects)
        except _GoError as exc:
            return Result.FAILURE, url_error(current, str(exc)), None
        if hop is None:
            break  # ErrUseLastResponse: this 3xx is the answer
        target, next_host = hop
        progress.url = target
        await _drain(response)
        if requests >= MAX_REDIRECT_REQUESTS:
            return Result.FAILURE, url_error(location, TOO_MANY_REDIRECTS), None
        hop_headers = _redirect_headers(headers, current, target)
        current, host = target, next_host
        conn.reset()

    progress.reading_body = True
    progress.body = body = bytearray()
    try:
        await _read_at_most(response.stream, MAX_OUTPUT_BYTES, body)
    except (httpx.TransportError, OSError) as exc:
        return Result.FAILURE, "", _body_error(exc, conn)
    finally:
        await response.aclose()
    return (*classify(response.status_code, decode(body)), None)


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
    progress = _Progress(url)
    conn = _Conn()
    result, output, error, timed_out = Result.FAILURE, "", None, False
    started_at = time.time()
    start = time.monotonic()
    try:
        async with asyncio.timeout(timeout if timeout > 0 else None) as deadline:
            header_map = _header_map(headers, kube_version)
            result, output, error = await _exchange(
                transport, url, header_map, follow_non_local_redirects, progress, conn
            )
    except TimeoutError:
        if not deadline.expired():
            raise
        timed_out = True
        if progress.reading_body:
            # ReadAtMost fails: (Failure, "", err), which the prober retries
            error = TIMEOUT_READING_BODY
        else:
            output = url_error(progress.url, TIMEOUT_AWAITING_HEADERS)
    finally:
        latency = time.monotonic() - start
        await transport.aclose()
    return Attempt(
        handler="http",
        target=url,
        result=result,
        output=output,
        error=error,
        latency=latency,
        started_at=started_at,
        status_code=progress.status_code,
        body=None if progress.body is None else decode(bytes(progress.body)),
        timed_out=timed_out,
    )
