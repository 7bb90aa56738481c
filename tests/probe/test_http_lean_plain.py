"""The lean handler's plain-response reader against the reference, through `probe()` on loopback.

The lean handler (`probetui.probe.http_lean`) reads the common response, a whole head in the
first read framed by one Content-Length or by the close, without h11, and hands everything else
to Go's head reading (`HeadGate`) and h11 from its first byte; the reference
(`tests/probe/http_oracle.py`, httpx over httpcore's h11) always takes the second way. Each response
below is sent by a real server on 127.0.0.1, once whole, then cut in two at every byte (large
ones: 150 cuts) and one byte per write, ending in the server's close or in a reset, and probed
by both handlers: every field of the two Attempts must be identical (result, status code,
output, body to the 10 KiB cap, error text; only the probe's own ephemeral port is masked). The
plain reader only takes a head that arrived whole, so the cuts hold it to handing everything
else over unchanged. Sent whole, the responses marked True must be read the plain way (no read
reaches the head gate: the point of the plain reader, as h11's objects were a quarter of the
engine's CPU per attempt) and the others the general way. The network parts of the handler are
covered by `test_http_lean.py`.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import dataclasses
import fcntl
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from probetui.probe import http_lean
from probetui.probe.base import MAX_OUTPUT_BYTES, Attempt
from probetui.probe.response_head import HeadGate
from tests.probe import http_oracle as http
from tests.probe.http_servers import response, serve

pytestmark = pytest.mark.timeout(60)

OK = b"HTTP/1.1 200 OK\r\n"
BIG = b"x" * (MAX_OUTPUT_BYTES + 5000)

# (name, response bytes, read without h11 when sent whole)
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
    # followed to /other, which answers a plain 200 (see _answer)
    ("redirect", b"HTTP/1.1 302 Found\r\nLocation: /other\r\nContent-Length: 3\r\n\r\nabc", True),
    ("ows around values", OK + b"A:   spaced   \r\nB:\tt\t\r\nContent-Length:  2 \r\n\r\nok", True),
    ("inner spaces", OK + b"X-Note: a  b c\r\n\r\n", True),
    ("empty value", OK + b"X-Empty:\r\nX-Blank:   \r\n\r\n", True),
    ("repeated header", OK + b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n", True),
    ("names keep their case", OK + b"cOnTeNt-LeNgTh: 2\r\nx-LOWER: v\r\n\r\nok", True),
    ("token characters", OK + b"X!#$%&'*+.^_`|~9: v\r\n\r\n", True),
    ("large body", OK + b"Content-Length: %d\r\n\r\n" % len(BIG) + BIG, True),
    ("large body, no length", OK + b"\r\n" + BIG, True),
    # plain in form, but never whole in one 64 KiB read, so h11 reads it; whole, h11 takes it,
    # and cut, Go's reading refuses it
    ("huge head", OK + b"X-Big: " + b"y" * (150 * 1024) + b"\r\n\r\n", False),
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

# long enough that a probe never times out here: every response ends in a close or a reset
TIMEOUT = 30.0
# while a reset waits for the probe's kernel to have every byte (at most a second)
PAUSE = 0.001
# probes in flight at once (each a pair: lean, then the reference, on one delivery)
PARALLEL = 8
_LOCAL_PORT = re.compile(r"tcp (\S+?):\d+->")


def _splits(data: bytes) -> list[list[bytes]]:
    """Whole; cut in two at every byte (large ones: 150 cuts); one byte per write (small ones)."""
    out = [[data]]
    step = 1 if len(data) < 400 else max(97, len(data) // 150)
    out += [[data[:i], data[i:]] for i in range(1, len(data), step)]
    if len(data) < 400:
        out.append([data[i : i + 1] for i in range(len(data))])
    return out


async def _let_the_probe_read() -> None:
    """A few turns of the event loop the probe runs on too: its reader, waiting on the socket,
    takes what was written before the next write comes (a write shares one loop turn with the
    readers the kernel wakes, so one turn is not enough)."""
    for _ in range(3):
        await asyncio.sleep(0)


# Linux's SIOCOUTQNSD: bytes written but not yet sent. On loopback a segment sent is in the
# peer's receive queue, which a reset leaves for it to read.
_SIOCOUTQNSD = 0x894B


def _unsent(sock: socket.socket) -> int:
    buf = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), _SIOCOUTQNSD, buf)
    return buf[0]


@dataclasses.dataclass
class Responder:
    """Answers `/<n>` with the writes of delivery n, then closes (or resets, once the probe has
    every byte: a reset must not throw away what was sent); `/other` with a plain 200."""

    deliveries: list[list[bytes]]
    reset: bool

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        path = head.split(b" ", 2)[1].decode()
        if path == "/other":
            writer.write(response(200, "other"))
            await writer.drain()
            return
        with contextlib.suppress(ConnectionError):
            for i, piece in enumerate(self.deliveries[int(path[1:])]):
                if i:
                    await _let_the_probe_read()
                writer.write(piece)
                await writer.drain()
        if self.reset:
            sock = writer.get_extra_info("socket")
            with contextlib.suppress(OSError):
                for _ in range(1000):
                    if not _unsent(sock):
                        break
                    await asyncio.sleep(PAUSE)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            writer.transport.abort()


def _exact(attempt: Attempt) -> dict[str, Any]:
    fields = dataclasses.asdict(attempt)
    del fields["latency"], fields["started_at"]
    # the probe's own ephemeral port is the one thing two runs cannot share
    fields["output"] = _LOCAL_PORT.sub(r"tcp \1:<local>->", fields["output"])
    if fields["error"]:
        fields["error"] = _LOCAL_PORT.sub(r"tcp \1:<local>->", fields["error"])
    return fields


async def _both(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The lean handler's Attempt and the reference's, on two deliveries of the same writes."""
    lean = await http_lean.probe(url, (), TIMEOUT)
    reference = await http.probe(url, (), TIMEOUT)
    assert not lean.timed_out and not reference.timed_out, url
    return _exact(lean), _exact(reference)


@contextlib.contextmanager
def _general_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the reads fed to Go's head reading (`HeadGate`), which every response but the
    plain one goes through on its way to h11, while the block runs."""
    seen = [0]
    feed = HeadGate.feed

    def counting(self: HeadGate, data: bytes) -> bytes | None:
        seen[0] += 1
        return feed(self, data)

    with monkeypatch.context() as m:
        m.setattr(HeadGate, "feed", counting)
        yield seen


@pytest.mark.parametrize(("name", "data", "plain"), RESPONSES, ids=[r[0] for r in RESPONSES])
@pytest.mark.parametrize("reset", [False, True], ids=["close", "reset"])
async def test_lean_reads_as_the_reference_does(
    name: str, data: bytes, plain: bool, reset: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    deliveries = _splits(data)
    async with serve(raw_handler=Responder(deliveries, reset)) as server:
        # sent whole: the plain reader takes exactly the responses it is meant to
        with _general_reads(monkeypatch) as general:
            whole = await http_lean.probe(server.url("/0"), (), TIMEOUT)
        assert (general[0] == 0) == plain, (name, whole)

        limit = asyncio.Semaphore(PARALLEL)

        async def compare(n: int) -> None:
            async with limit:
                lean, reference = await _both(server.url(f"/{n}"))
            assert lean == reference, (name, [len(p) for p in deliveries[n]])

        async with asyncio.TaskGroup() as group:
            for n in range(len(deliveries)):
                group.create_task(compare(n))


async def test_nothing_before_the_close_is_eof() -> None:
    """No byte before the server's close: Go's `EOF`, from both handlers."""
    async with serve(raw_handler=Responder([[]], reset=False)) as server:
        url = server.url("/0")
        lean, reference = await _both(url)
    assert lean == reference
    assert lean["output"] == f'Get "{url}": EOF', lean


async def test_reset_before_any_byte_is_a_read_error() -> None:
    async with serve(raw_handler=Responder([[]], reset=True)) as server:
        url = server.url("/0")
        lean, reference = await _both(url)
    assert lean == reference
    text = f"read tcp 127.0.0.1:<local>->127.0.0.1:{server.port}: read: connection reset by peer"
    assert lean["output"] == f'Get "{url}": {text}', lean


def test_a_head_read_again_gives_its_own_body_and_headers() -> None:
    """A head seen before (`_plain_head` keeps what it read of it) still hands out the body
    bytes of this read and a header list of its own."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\n\r\n"
    first = http_lean._plain_head(head + b"ok")
    assert first is not None
    first[1].append((b"X-Changed", b"1"))
    second = http_lean._plain_head(head + b"no")
    assert second == (200, [(b"Content-Length", b"2"), (b"X-A", b"b")], b"no", 2)
    refused = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert http_lean._plain_head(refused) is None
    assert http_lean._plain_head(refused + b"0\r\n\r\n") is None
