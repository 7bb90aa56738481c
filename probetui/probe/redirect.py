"""Decide a redirect as the kubelet's HTTP client does (docs/kubelet-behaviour.md §13.5, §13.7).

`RedirectChecker` (`pkg/probe/http/http.go`) and what net/http's `Client.do` decides on each
3xx (`net/http/client.go`): which codes are followed, where to, with which Host and headers.
The loop that applies it is `probetui.probe.exchange`.
"""

from __future__ import annotations

from urllib.parse import urljoin

from probetui.probe.gotext import GoError, go_quote
from probetui.probe.request import HeaderMap
from probetui.probe.url import authority, dial_addr, hostname, is_absolute, without_userinfo

# RedirectChecker / defaultCheckRedirect: a chain may hold at most this many requests
MAX_REDIRECT_REQUESTS = 10
# net/http redirectBehavior: only these codes are followed; other 3xx codes are final
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
# net/http shouldCopyHeaderOnRedirect: only sent on to the same domain or a subdomain
_SENSITIVE = frozenset({"Authorization", "Www-Authenticate", "Cookie", "Cookie2"})


def next_hop(
    current: str, location: str, host: str, original_hostname: str, follow_non_local: bool
) -> tuple[str, str] | None:
    """net/http's redirect decision: (URL to follow, Host header to keep), or None when this 3xx
    is the answer (ErrUseLastResponse). An unparsable Location raises `GoError` with Go's text.
    """
    try:
        target = urljoin(current, location)
    except ValueError:
        # urljoin only refuses an unclosed IPv6 bracket, which Go's url.Parse refuses too
        quoted = go_quote(location)
        raise GoError(
            f"failed to parse Location header {quoted}: parse {quoted}: missing ']' in host"
        ) from None
    if not follow_non_local and hostname(target) != original_hostname:
        return None
    # Go keeps a custom Host only when the Location is relative (golang.org/issue/22233)
    keep = host if host and host != authority(current) and not is_absolute(location) else ""
    return target, keep


def redirect_headers(original: HeaderMap, previous: str, target: str) -> HeaderMap:
    """net/http makeHeadersCopier plus the Referer the client sets on each redirect."""
    keep_sensitive = _is_domain_or_subdomain(_canonical_addr(target), _canonical_addr(previous))
    headers = {k: v for k, v in original.items() if keep_sensitive or k not in _SENSITIVE}
    referer = _referer(previous, target)
    if referer:
        headers["Referer"] = [referer]
    return headers


def _canonical_addr(url: str) -> str:
    return dial_addr(url).lower()


def _is_domain_or_subdomain(sub: str, parent: str) -> bool:
    if sub == parent:
        return True
    return sub.endswith(parent) and sub[len(sub) - len(parent) - 1 : len(sub) - len(parent)] == "."


def _referer(last: str, new: str) -> str:
    """net/http refererForURL: the previous URL without userinfo, none on https -> http."""
    if last.startswith("https:") and new.startswith("http:"):
        return ""
    return without_userinfo(last)
