"""Build the probe's request headers: `newProbeRequest` and `v1HeaderToHTTPHeader`.

See `pkg/probe/http/request.go` and docs/kubelet-behaviour.md §13.2-13.5; also the header
lines Go's `Request.write` makes of them: validation, Host, order, and the transport's
`Connection: close`.
"""

from __future__ import annotations

from collections.abc import Sequence

from probetui.probe.base import DEFAULT_KUBE_VERSION, user_agent
from probetui.probe.gotext import GoError, go_quote
from probetui.probe.url import authority
from probetui.spec.model import HTTPHeader

# Go http.Header keys are kept in insertion order here; the wire order is Go's sorted order.
HeaderMap = dict[str, list[str]]
SpecHeaders = Sequence[tuple[str, str] | HTTPHeader]

_ALNUM = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
# httpguts.IsTokenRune: what a header name may hold
_TCHAR = _ALNUM | frozenset("!#$%&'*+-.^_`|~")
# net/http Request.write sends these from fields of the request, never from the header map
_NOT_FROM_MAP = frozenset({"Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer"})
_GO_DEFAULT_USER_AGENT = "Go-http-client/1.1"


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


def header_map(spec_headers: SpecHeaders, kube_version: str) -> HeaderMap:
    """The request's http.Header: the probe's headers under canonical names, then the
    kubelet's User-Agent and Accept defaults (§13.2-13.4)."""
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
    headers = header_map(spec_headers, kube_version)
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


def custom_host(headers: HeaderMap) -> str:
    """The Host a probe's own Host header asks for (Request.Host), "" for the URL's (§13.5)."""
    return headers["Host"][0] if "Host" in headers else ""


def wire_headers(url: str, headers: HeaderMap, host: str) -> list[tuple[bytes, bytes]]:
    """The header lines Go's Request.write sends for a GET of `url`, in its order: Host (`host`,
    or else the URL's), User-Agent, the rest sorted by name, then the transport's
    `Connection: close` (DisableKeepAlives). Raises `GoError` where Go refuses to send."""
    host = host or authority(url)
    check_header_map(headers)
    if not valid_host_header(host):
        raise GoError("http: invalid Host header")
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


def check_header_map(headers: HeaderMap) -> None:
    """`Transport.roundTrip`'s check of the header map before anything is dialled, whatever
    the protocol: raises `GoError` with its text for a bad name or value."""
    for name, values in headers.items():
        if not is_token(name):
            raise GoError(f"net/http: invalid header field name {go_quote(name)}")
        if not all(_valid_value(v) for v in values):
            raise GoError(f"net/http: invalid header field value for {go_quote(name)}")


def is_token(name: str) -> bool:
    """httpguts.ValidHeaderFieldName: a non-empty run of token characters."""
    return bool(name) and all(c in _TCHAR for c in name)


_HOST_BYTES = _ALNUM | frozenset("!$%&'()*+,-.:;=[]_~")


def valid_host_header(host: str) -> bool:
    """httpguts.ValidHostHeader: bytes >= 0x80 pass (IDNA is dealt with elsewhere)."""
    return all(c in _HOST_BYTES or ord(c) >= 0x80 for c in host)


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")
