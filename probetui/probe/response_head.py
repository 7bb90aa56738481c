"""Read a response head as Go does, before h11 sees the bytes, in both HTTP handlers.

It follows `net/http/response.go` ReadResponse, `net/textproto` readMIMEHeader and
`net/http/transport.go` readLoop, so that what Go refuses is refused first and in Go's words.
"""

from __future__ import annotations

import re

from probetui.probe.base import decode
from probetui.probe.gotext import (
    HEADERS_TOO_LARGE,
    MAX_RESPONSE_HEADER_BYTES,
    TRANSPORT_BROKEN,
    GoError,
    go_quote,
)

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


class HeadGate:
    """Gates a response's bytes as Go's transport reads them, held back from h11 until its
    head ends.

    Go judges the status line alone, as soon as its LF is in (or the connection ends), before it
    reads any header: `malformed HTTP response "..."`, `... status code`, `... version`. It reads
    at most 10 MiB of head, and refuses header lines h11 takes (a DEL in a value) by its own
    rules (`_mime_header_error`); a connection that ends inside the head fails the line it cut
    off, or else reads as `unexpected EOF`. h11 waits for the whole head first, refuses in its
    own words (`illegal request line`, `Receive buffer too long`) and under its own limit, and
    httpcore calls any end inside a head `Server disconnected`. Both handlers feed each
    response's reads through a gate: it raises `GoError` with Go's text, or hands on the head
    in one piece once it has ended, and everything after that as it comes; h11 is left the
    framing of the body, and the refusals Go would not make (`gotext.head_error`).
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
                    raise GoError(TRANSPORT_BROKEN + HEADERS_TOO_LARGE)
                if data:
                    return None
                if not buf:
                    # not a byte came: Go's bare EOF, which the caller reports as ever
                    self.open = True
                    return data
                self._judge(bytes(buf))
                raise GoError(TRANSPORT_BROKEN + "unexpected EOF")
            line = bytes(buf[:end])
            self._judge(line[:-1] if line.endswith(b"\r") else line)
            self._line_read = True
            searched = 0
        blank = _HEAD_END.search(buf, searched)
        if blank is not None and blank.end() <= MAX_RESPONSE_HEADER_BYTES:
            error = _mime_header_error(bytes(buf[: blank.end()]))
            if error is not None:
                raise GoError(TRANSPORT_BROKEN + error)
            self.open = True
            self._buf = bytearray()
            return bytes(buf)
        if len(buf) >= MAX_RESPONSE_HEADER_BYTES:
            raise GoError(TRANSPORT_BROKEN + HEADERS_TOO_LARGE)
        if not data:
            raise GoError(TRANSPORT_BROKEN + (_mime_header_error(bytes(buf)) or "unexpected EOF"))
        return None

    def broken_off(self) -> None:
        """A read failed: Go judges what it has of the status line before the read's error."""
        if not (self.open or self._line_read) and self._buf:
            self._judge(bytes(self._buf))

    @staticmethod
    def _judge(line: bytes) -> None:
        error = _status_line_error(line)
        if error is not None:
            raise GoError(TRANSPORT_BROKEN + error)
