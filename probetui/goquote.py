"""Quote a string as Go's `%q` does (`strconv.Quote`, `strconv/quote.go`).

A leaf: it imports nothing of probetui, so the manifest model's validation texts (`spec`) and
the probes' error texts (`probe/gotext.py`) share the project's one strconv.Quote.
"""

from __future__ import annotations

_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def go_quote(text: str | bytes) -> str:
    """Go's `%q` of a string (strconv.Quote), which the kubelet's texts use for URLs, commands,
    addresses, status names and the lines a server sent.

    Go strings are bytes: `bytes`, and the lone surrogates that `surrogateescape` leaves for
    bytes that are not UTF-8, come out as `\\xNN`, as Go prints a byte that is not UTF-8.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    out = ['"']
    for c in text:
        code = ord(c)
        if c in _GO_ESCAPES:
            out.append(_GO_ESCAPES[c])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c.isprintable():
            out.append(c)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            # a surrogate is no rune: Go prints the replacement character's escape
            out.append("\\ufffd")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


__all__ = ["go_quote"]
