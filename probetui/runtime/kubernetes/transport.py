"""Reach the API server one way for every client: TLS as Go verifies it, one server name, one proxy.

client-go builds one transport per `rest.Config` and every client made from it uses that
transport: list and watch, the websocket upgrades of exec and port-forward, pods/proxy
(`rest/transport.go`, `transport/cache.go`). kubernetes-asyncio does not: its websocket client
calls `ws_connect` without the proxy and `tls-server-name` that its REST client passes, a raw
`session.request` gets neither, and aiohttp's own environment lookup (`trust_env`) takes
`WSS_PROXY` for `wss://` where Go takes `HTTPS_PROXY`, and bypasses by other rules. So every
client's session is replaced by a `ClusterSession`: it fills the same proxy and server name into
every request, websocket upgrades included, and never consults the environment itself.

The proxy (client-go): `proxy-url` when the cluster entry sets one, for every request; else
Go's `http.ProxyFromEnvironment`: `HTTPS_PROXY` (or `https_proxy`) for an https server,
`HTTP_PROXY` for http, none for `localhost` or a loopback address, none where `NO_PROXY`
matches (`*`, a domain and its subdomains, `.domain` for subdomains only, an IP, a CIDR, each
with an optional port). `ALL_PROXY` is not Go's and is ignored.

TLS (Go's crypto/x509 verifier, which kubectl uses): Python 3.13 turns on
`VERIFY_X509_STRICT` in `create_default_context`, which refuses CA certificates Go accepts (a
CA without keyUsage, a basicConstraints not marked critical); it is turned off here. Go takes
every certificate in the CA pool as a trust anchor, a non-self-signed intermediate too: that is
OpenSSL's `VERIFY_X509_PARTIAL_CHAIN`, turned on here (3.13 does too; 3.11 does not).

One server: a client connects to the scheme, host and port of its server URL and nowhere else.
aiohttp follows redirects (`request` and `ws_connect` alike) and, like Go's http.Client, drops
`Authorization` when one leaves the host, but the TLS context would still present the client
certificate there, and the request itself would reach a server nobody named. So the connector,
which every request and every redirect hop asks for a connection, refuses any other address
with `RedirectRefused` before a socket is opened: no credential reaches another host or port.
A redirect to the same server is followed, as client-go follows it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from yarl import URL

from probetui.probe.gotext import join_host_port

__all__ = [
    "ClusterSession",
    "RedirectRefused",
    "ServerConnector",
    "go_ssl_context",
    "install",
    "proxy_for",
    "proxy_from_environment",
    "server_address",
]

# watch events can carry large objects (the API server caps one at ~1.5 MiB)
READ_BUFSIZE = 2**21

# told (the Authorization header that was sent, when the request started) of each 401
OnUnauthorized = Callable[[str | None, float], None]


def go_ssl_context(
    *,
    cafile: str | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    verify: bool = True,
) -> ssl.SSLContext:
    """Return a client context that accepts and refuses the chains Go's verifier does."""
    context = ssl.create_default_context(cafile=cafile)
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    if certfile:
        context.load_cert_chain(certfile, keyfile=keyfile)
    if not verify:
        # insecure-skip-tls-verify: Go's InsecureSkipVerify skips the name check as well
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _env(environ: Mapping[str, str], *names: str) -> str:
    # Go's getEnvAny: the first of the names that is set and not empty
    for name in names:
        value = environ.get(name)
        if value:
            return value
    return ""


def _split_host_port(text: str) -> tuple[str, str]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, ""


def _no_proxy_matches(no_proxy: str, host: str, port: str) -> bool:
    """Go's httpproxy `useProxy` matchers, inverted: True when NO_PROXY exempts host:port."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        try:
            network = ipaddress.ip_network(entry, strict=False) if "/" in entry else None
        except ValueError:
            network = None
        if network is not None:
            if ip is not None and ip in network:
                return True
            continue
        entry_host, entry_port = _split_host_port(entry)
        if not entry_host:
            continue  # ":port" alone matches nothing in Go
        try:
            entry_ip = ipaddress.ip_address(entry_host)
        except ValueError:
            entry_ip = None
        if entry_ip is not None:
            if ip == entry_ip and (not entry_port or entry_port == port):
                return True
            continue
        if entry_host.startswith("*."):
            entry_host = entry_host[1:]
        # "example.com" covers itself and its subdomains; ".example.com" its subdomains only
        exact = not entry_host.startswith(".")
        suffix = entry_host if not exact else "." + entry_host
        name = host.lower()
        if (name.endswith(suffix) or (exact and name == suffix[1:])) and (
            not entry_port or entry_port == port
        ):
            return True
    return False


def proxy_from_environment(url: str, environ: Mapping[str, str]) -> str | None:
    """Go's `http.ProxyFromEnvironment` for `url`: the proxy URL, or None to go direct."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("https", "wss"):
        proxy = _env(environ, "HTTPS_PROXY", "https_proxy")
    elif scheme in ("http", "ws"):
        proxy = _env(environ, "HTTP_PROXY", "http_proxy")
    else:
        return None
    if not proxy:
        return None
    host = (parts.hostname or "").lower()
    port = str(parts.port or (443 if scheme in ("https", "wss") else 80))
    if not host or host == "localhost":
        return None
    try:
        if ipaddress.ip_address(host).is_loopback:
            return None
    except ValueError:
        pass
    if _no_proxy_matches(_env(environ, "NO_PROXY", "no_proxy"), host, port):
        return None
    # Go takes "proxy:3128" as "http://proxy:3128"
    return proxy if "://" in proxy else f"http://{proxy}"


def proxy_for(server: str, proxy_url: str | None, environ: Mapping[str, str]) -> str | None:
    """client-go's choice: the cluster's `proxy-url` for everything, else the environment's."""
    if proxy_url:
        return proxy_url
    return proxy_from_environment(server, environ)


def server_address(url: Any) -> str:
    """`scheme://host:port` of a URL, as the one server it names: ws and wss as http and https,
    the default port written out, the host lower-case without a final dot (an IPv6 address in
    its short form)."""
    parts = url if isinstance(url, URL) else URL(str(url))
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme.lower(), parts.scheme.lower())
    host = (parts.host or "").lower().rstrip(".")
    with contextlib.suppress(ValueError):
        host = str(ipaddress.ip_address(host))
    port = parts.port or (443 if scheme == "https" else 80)
    return f"{scheme}://{join_host_port(host, str(port))}"


class RedirectRefused(aiohttp.ClientConnectionError):
    """Signals a connection to anywhere but the API server, refused before a socket was opened.

    A connection error, so the reflectors retry it and a probe attempt reports it as its error:
    the server may stop redirecting.
    """

    def __init__(self, server: str, elsewhere: str) -> None:
        self.server = server
        self.elsewhere = elsewhere
        super().__init__(
            f"refused to follow the API server's redirect to {elsewhere}: probetui connects "
            f"only to {server} and follows no redirect off it (point the kubeconfig's server "
            "at the API server itself)"
        )


class ServerConnector(aiohttp.TCPConnector):
    """Opens connections to one server only (module docstring).

    Only the scheme, host and port are compared: a server URL's path prefix is the read-only
    guard's business, not the connection's.
    """

    def __init__(self, server: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.server = server_address(server)

    async def connect(self, req: Any, *args: Any, **kwargs: Any) -> Any:
        target = server_address(req.url)
        if target != self.server:
            raise RedirectRefused(self.server, target)
        return await super().connect(req, *args, **kwargs)


class ClusterSession:
    """Holds the aiohttp session of one API client, with the cluster's proxy and TLS server name.

    It stands in for the library's `rest_client.pool_manager`: `request` (list, watch, get, the
    pods/proxy relay) and `ws_connect` (exec, port-forward) get `proxy` and `server_hostname`
    unless the caller gave them; its connector opens connections to `server` only. Every 401 answer, websocket handshakes included, is told to
    `on_unauthorized` with the credentials it was sent, so they can be refreshed as client-go's
    exec and token-file authenticators do.
    """

    def __init__(
        self,
        *,
        server: str,
        ssl_context: ssl.SSLContext,
        proxy: str | None,
        server_hostname: str | None,
        limit: int = 100,
        on_unauthorized: OnUnauthorized | None = None,
    ) -> None:
        self.ssl_context = ssl_context
        self.proxy = proxy
        self.server_hostname = server_hostname
        self.on_unauthorized = on_unauthorized
        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(self._started)
        trace.on_request_end.append(self._ended)
        self._session = aiohttp.ClientSession(
            connector=ServerConnector(server, limit=limit, ssl=ssl_context),
            # the proxy is chosen above, by Go's rules; aiohttp's would differ (and read ~/.netrc)
            trust_env=False,
            read_bufsize=READ_BUFSIZE,
            trace_configs=[trace],
        )

    async def _started(
        self, session: aiohttp.ClientSession, context: SimpleNamespace, params: Any
    ) -> None:
        context.started = time.time()

    async def _ended(
        self, session: aiohttp.ClientSession, context: SimpleNamespace, params: Any
    ) -> None:
        if params.response.status == 401 and self.on_unauthorized is not None:
            sent = params.headers.get("Authorization")
            self.on_unauthorized(sent, getattr(context, "started", time.time()))

    def _fill(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("proxy") is None and self.proxy is not None:
            kwargs["proxy"] = self.proxy
        if kwargs.get("server_hostname") is None and self.server_hostname:
            kwargs["server_hostname"] = self.server_hostname
        return kwargs

    def request(self, method: str, url: Any, **kwargs: Any) -> Any:
        return self._session.request(method, url, **self._fill(kwargs))

    def ws_connect(self, url: Any, **kwargs: Any) -> Any:
        return self._session.ws_connect(url, **self._fill(kwargs))

    @property
    def connector(self) -> aiohttp.BaseConnector | None:
        return self._session.connector

    @property
    def closed(self) -> bool:
        return self._session.closed

    async def close(self) -> None:
        await self._session.close()

    def __getattr__(self, name: str) -> Any:
        # anything else of the session API (get, post, headers, ...) as aiohttp has it
        return getattr(self._session, name)


def install(
    client: Any,
    *,
    ssl_context: ssl.SSLContext,
    proxy: str | None,
    server_hostname: str | None,
    on_unauthorized: OnUnauthorized | None,
) -> Awaitable[None]:
    """Put a `ClusterSession` in `client` (an ApiClient or WsApiClient) in place of its own.

    Returns the closing of the library's session, which never made a connection.
    """
    rest = client.rest_client
    old = rest.pool_manager
    rest.pool_manager = ClusterSession(
        server=client.configuration.host,
        ssl_context=ssl_context,
        proxy=proxy,
        server_hostname=server_hostname,
        limit=client.configuration.connection_pool_maxsize,
        on_unauthorized=on_unauthorized,
    )
    # the REST client passes these itself when set: keep them the same as the session's
    rest.proxy = proxy
    rest.server_hostname = server_hostname
    return old.close()
