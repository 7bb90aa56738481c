"""The lean handler's plain-response reader (`http_lean._plain_head` and `_PlainResponse`)
against h11, the parser it stands in for.

Each response below is handed to `http_lean._receive` twice, once as the handler reads it (the
plain reader when it can, h11 otherwise) and once with h11 alone, and read to the end as the
handler reads a body (`_read_at_most`, the 10 KiB cap). What comes out must be identical: the
status, every header as bytes, the body, or the error text. Each response is also cut in two at
every byte and fed one byte per read, since the plain reader only takes a head that arrived
whole and must hand everything else to h11 unchanged. Some responses end in a reset instead of
the peer's close. The network parts of the handler are covered by `test_http_lean.py`.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from probetui.probe import http_lean
from probetui.probe.base import MAX_OUTPUT_BYTES

_TARGET: http_lean._Target = ("http", "127.0.0.1", 80, b"/healthz")
_LINES = ((b"Host", b"127.0.0.1"), (b"User-Agent", b"kube-probe/1.32"))

OK = b"HTTP/1.1 200 OK\r\n"
BIG = b"x" * (MAX_OUTPUT_BYTES + 5000)

# (name, response bytes); the plain reader should take the ones marked True
RESPONSES: list[tuple[str, bytes, bool]] = [
    ("content-length", OK + b"Content-Length: 2\r\nContent-Type: text/plain\r\n\r\nok", True),
    ("content-length zero", OK + b"Content-Length: 0\r\n\r\n", True),
    ("content-length zero, bytes after", OK + b"Content-Length: 0\r\n\r\nstray", True),
    ("bytes past content-length", OK + b"Content-Length: 2\r\n\r\nokAND MORE", True),
    ("short body", OK + b"Content-Length: 10\r\n\r\nok", True),
    ("no length: body to the end", OK + b"Server: x\r\n\r\nall of it", True),
    ("no headers, no body", OK + b"\r\n", True),
    ("http/1.0", b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", True),
    ("no reason", b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", True),
    ("empty reason", b"HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\nok", True),
    ("long reason", b"HTTP/1.1 503 Service Unavailable (draining)\r\n\r\nbusy", True),
    ("500", b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\nboom", True),
    ("399", b"HTTP/1.1 399 Odd\r\nContent-Length: 0\r\n\r\n", True),
    ("999", b"HTTP/1.1 999 Odd\r\n\r\n", True),
    ("redirect", b"HTTP/1.1 302 Found\r\nLocation: /other\r\nContent-Length: 3\r\n\r\nabc", True),
    ("ows around values", OK + b"A:   spaced   \r\nB:\tt\t\r\nContent-Length:  2 \r\n\r\nok", True),
    ("inner spaces", OK + b"X-Note: a  b c\r\n\r\n", True),
    ("empty value", OK + b"X-Empty:\r\nX-Blank:   \r\n\r\n", True),
    ("repeated header", OK + b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n", True),
    ("names keep their case", OK + b"cOnTeNt-LeNgTh: 2\r\nx-LOWER: v\r\n\r\nok", True),
    ("token characters", OK + b"X!#$%&'*+.^_`|~9: v\r\n\r\n", True),
    ("large body", OK + b"Content-Length: %d\r\n\r\n" % len(BIG) + BIG, True),
    ("large body, no length", OK + b"\r\n" + BIG, True),
    # never whole in one 64 KiB read; whole, h11 takes it too, and cut, Go's reading refuses it
    ("huge head", OK + b"X-Big: " + b"y" * (150 * 1024) + b"\r\n\r\n", True),
    # h11's to judge: the plain reader must step aside
    ("chunked", OK + b"Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", False),
    ("chunked, cut short", OK + b"Transfer-Encoding: chunked\r\n\r\n5\r\nok", False),
    (
        "chunked and length",
        OK + b"Transfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n0\r\n\r\n",
        False,
    ),
    ("gzip encoding", OK + b"Transfer-Encoding: gzip\r\n\r\nok", False),
    ("two equal lengths", OK + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\nok", False),
    ("two lengths", OK + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nok", False),
    ("length list", OK + b"Content-Length: 2, 2\r\n\r\nok", False),
    ("length not a number", OK + b"Content-Length: two\r\n\r\nok", False),
    ("negative length", OK + b"Content-Length: -1\r\n\r\nok", False),
    ("huge length", OK + b"Content-Length: 1234567890123456789012\r\n\r\nok", False),
    ("204 with a length", b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello", False),
    ("304", b"HTTP/1.1 304 Not Modified\r\n\r\n", False),
    ("100 then 200", b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 2\r\n\r\nok", False),
    ("101", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", False),
    ("http/2.0 line", b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok", False),
    ("lower-case version", b"http/1.1 200 OK\r\n\r\n", False),
    ("two-digit status", b"HTTP/1.1 20 OK\r\n\r\n", False),
    ("tab in reason", b"HTTP/1.1 200 O\tK\r\n\r\n", False),
    ("obs-text in reason", b"HTTP/1.1 200 \xe2\x9c\x93\r\n\r\n", False),
    ("tab inside a value", OK + b"X-Tab: a\tb\r\n\r\n", False),
    ("obs-text in a value", OK + b"X-Utf8: caf\xc3\xa9\r\n\r\n", False),
    ("obs-fold", OK + b"X-Fold: a\r\n  b\r\nContent-Length: 0\r\n\r\n", False),
    ("space before colon", OK + b"X-Bad : v\r\n\r\n", False),
    ("no colon", OK + b"garbage\r\n\r\n", False),
    ("bare LF lines", b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", False),
    ("bare LF in the head", OK + b"A: 1\nB: 2\r\n\r\n", False),
    ("bare CR in a value", OK + b"A: 1\r2\r\n\r\n", False),
    ("blank line first", b"\r\n" + OK + b"\r\n", False),
    ("empty head", b"\r\n\r\n", False),
    ("not http", b"SSH-2.0-OpenSSH_9.6\r\n\r\n", False),
    ("head never ends", OK + b"Content-Length: 2\r\n", False),
    ("control byte first", b"\x01garbage", False),
]


@dataclass
class FakeStream:
    """Hands out the given reads one by one, then the peer's close (b"") or a reset."""

    reads: list[bytes]
    reset: bool = False

    def __post_init__(self) -> None:
        self._next = iter(self.reads)

    async def recv(self) -> bytes:
        try:
            return next(self._next)
        except StopIteration:
            if self.reset:
                raise ConnectionResetError(errno.ECONNRESET, "reset") from None
            return b""

    def addresses(self) -> str:
        return "127.0.0.1:40000->127.0.0.1:80"


async def _outcome(reads: list[bytes], reset: bool, plain: bool) -> tuple[object, ...]:
    stream = FakeStream(reads, reset)
    try:
        response = await http_lean._receive(stream, _TARGET, _LINES, plain=plain)  # type: ignore[arg-type]
    except http_lean._Failed as exc:
        return ("failed", exc.detail)
    head = (
        response.status_code,
        [(bytes(k), bytes(v)) for k, v in response.headers],
        response.header_values(b"location"),
    )
    body = bytearray()
    try:
        await http_lean._read_at_most(response, MAX_OUTPUT_BYTES, body)
    except http_lean._BodyBroken as exc:
        return ("broken", head, exc.text)
    return ("ok", head, bytes(body), type(response) is http_lean._PlainResponse)


def _splits(data: bytes) -> Iterator[list[bytes]]:
    yield [data]
    step = 1 if len(data) < 400 else max(97, len(data) // 150)  # large ones: 150 cuts will do
    for i in range(1, len(data), step):
        yield [data[:i], data[i:]]
    if len(data) < 400:
        yield [data[i : i + 1] for i in range(len(data))]


@pytest.mark.parametrize(("name", "data", "plain"), RESPONSES, ids=[r[0] for r in RESPONSES])
@pytest.mark.parametrize("reset", [False, True], ids=["close", "reset"])
async def test_plain_reader_reads_as_h11_does(
    name: str, data: bytes, plain: bool, reset: bool
) -> None:
    # the plain reader takes exactly the responses it is meant to, when they arrive whole
    assert (http_lean._plain_head(data) is not None) == plain, name
    for reads in _splits(data):
        mine = await _outcome(reads, reset, plain=True)
        theirs = await _outcome(reads, reset, plain=False)
        # which reader read it is the one field allowed to differ
        if mine[0] == "ok":
            mine, theirs = mine[:-1], theirs[:-1]
        assert mine == theirs, (name, [len(r) for r in reads])


async def test_nothing_before_the_close_is_eof() -> None:
    """No byte before the peer's close: Go's `EOF`, the plain way as the h11 way."""
    assert await _outcome([], False, plain=True) == ("failed", "EOF")
    assert await _outcome([], False, plain=False) == ("failed", "EOF")


async def test_reset_before_any_byte_is_a_read_error() -> None:
    text = "read tcp 127.0.0.1:40000->127.0.0.1:80: read: connection reset by peer"
    assert await _outcome([], True, plain=True) == ("failed", text)
    assert await _outcome([], True, plain=False) == ("failed", text)
