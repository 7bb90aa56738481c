"""Format the probe's URL as `formatURL` does (`pkg/probe/http/request.go`).

See docs/kubelet-behaviour.md §13.1; with the parts of Go's `net/url` it depends on, and the
pieces of a URL that Go's client compares on a redirect or names in an error (`url.URL.Host`,
`Hostname()`, `canonicalAddr`).

Go strings are bytes, so the parser works on one code point per UTF-8 byte and gives text back
with `surrogateescape` for bytes that are not UTF-8.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from probetui.probe.gotext import go_quote, join_host_port

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
    """Holds the fields of Go's url.URL that `formatURL` and `String()` use."""

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
# The pieces Go's client compares

_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


def authority(url: str) -> str:
    """url.URL.Host: host[:port] as written, without userinfo."""
    match = _AUTHORITY.match(url)
    return match[1].rpartition("@")[2] if match else ""


def hostname(url: str) -> str:
    """url.URL.Hostname(): case kept, port and IPv6 brackets removed."""
    host = authority(url)
    colon = host.rfind(":")
    if colon >= 0 and _optional_port(host[colon + 1 :]):
        host = host[:colon]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def _optional_port(digits: str) -> bool:
    return digits == "" or (digits.isascii() and digits.isdigit())


def dial_addr(url: str) -> str:
    """url.URL's host and port, the port defaulted from the scheme (net/http canonicalAddr)."""
    hostport = authority(url)
    colon = hostport.rfind(":")
    port = hostport[colon + 1 :] if colon >= 0 and "]" not in hostport[colon:] else ""
    if not port:
        port = "443" if url[:6].lower() == "https:" else "80"
    return join_host_port(hostname(url), port)


def is_absolute(location: str) -> bool:
    """Whether url.Parse finds a scheme in `location` (a Location header's value)."""
    try:
        return bool(_go_scheme(location)[0])
    except _URLError:
        return False


def without_userinfo(url: str) -> str:
    """The URL with its userinfo (`user:password@`) removed, as refererForURL removes it."""
    match = _AUTHORITY.match(url)
    if match and "@" in match[1]:
        url = url.replace(match[1], match[1].rpartition("@")[2], 1)
    return url
