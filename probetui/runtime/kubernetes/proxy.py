"""`--via proxy` carries an HTTP probe through the API server's `pods/proxy`.

The handler dials a loopback listener as if it were the pod; for each connection (the first,
and each same-host redirect the handler follows) the listener reads the one request, sends it to `/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH` with the client's
credentials (redirects not followed: the prober decides about those), and writes the answer
back.

Differences from the kubelet's path, shown with every attempt's `via`: the API server's proxy
dials the pod IP from the control plane, not from the node; it drops the probe's own
`Authorization` header (it authenticates the caller with that header and strips it); it answers
503 itself when it cannot reach the pod, where the kubelet would see a refused connection; and
it may rewrite `Location`. Plain HTTP only: the listener speaks no TLS.

A 403 from the API server itself (a Status saying the user may not use `pods/proxy`) is told
apart from a 403 of the application (`forbidden`) and remembered per namespace: the attempt that
met it and the ones after report "forbidden" as an error (`KubernetesRuntime.reach_refused`)
instead of counting a failure of the container.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from probetui.runtime.kubernetes.streams import quiet_on_cancel

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 16 * 1024
# the listener closes this long after the probe's timeout: the attempt is over by then
ACCEPT_WINDOW = 1.0
# the first request and the kubelet's 10 same-host redirects, each a new connection
MAX_CONNECTIONS = 11
# what is relayed of a body: more than the prober reads (10 KiB), so truncation is the prober's
MAX_RELAY_BODY = 64 * 1024
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "upgrade",
    "host",
    "te",
    "trailer",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
}


def _api_status(body: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("kind") == "Status" else None


def api_forbidden(status: int, body: bytes) -> str | None:
    """Return the API server's own refusal of `pods/proxy` (not the application's 403), or None."""
    doc = _api_status(body) if status == 403 else None
    if doc is None or doc.get("reason") != "Forbidden":
        return None
    message = str(doc.get("message") or "")
    return message if "pods/proxy" in message else None


def api_path_error(status: int, body: bytes) -> str | None:
    """Return an answer the API server gave itself, not the pod: its 401 (the credentials, e.g. an
    expired token) or its 503 when it could not reach the pod (`proxy.ErrorResponder` in
    apimachinery's upgrade-aware handler: "error trying to reach service: ..."). Neither says
    anything about the container, so the attempt is an error, which the prober throws away."""
    if status not in (401, 503):
        return None
    doc = _api_status(body)
    if doc is None:
        return None
    message = str(doc.get("message") or "")
    if status == 401 and doc.get("reason") == "Unauthorized":
        return f"the API server refused the credentials: {message or 'Unauthorized'}"
    if status == 503 and message.startswith("error trying to reach service"):
        return f"the API server could not reach the pod: {message}"
    return None


def pod_proxy_prefix(host: str, namespace: str, pod: str, port: int) -> str:
    """Return the path of `pods/POD:PORT/proxy` on the API server `host` (its own path first)."""
    server_path = URL(host).raw_path.rstrip("/")
    return (
        f"{server_path}/api/v1/namespaces/{quote(namespace, safe='')}/pods/"
        f"{quote(pod, safe='')}:{port}/proxy"
    )


def unproxied_location(location: str, prefix: str) -> str:
    """Return the pod's own Location, from the one the API server rewrote.

    The pods/proxy transport (apimachinery `proxy.Transport.rewriteURL`) puts a same-host
    Location with an absolute path under the proxy's path, and on the API server's scheme and
    host. Followed as it is, the prober would ask the API server for `.../proxy/.../proxy/...`.
    Different hosts and relative paths it leaves alone, and so does this."""
    url = URL(location)
    path = url.raw_path
    if not (path == prefix or path.startswith(prefix + "/")):
        return location
    rest = path[len(prefix) :] or "/"
    return rest + (f"?{url.raw_query_string}" if url.raw_query_string else "")


class OneShotProxy:
    def __init__(
        self,
        core: Any,
        namespace: str,
        pod: str,
        port: int,
        timeout: float,
        *,
        on_forbidden: Any = None,
    ) -> None:
        self.api = core.api_client
        self.namespace = namespace
        self.pod = pod
        self.port = port
        self.timeout = timeout
        self.on_forbidden = on_forbidden
        self.server: asyncio.Server | None = None
        self.done = asyncio.Event()
        self.error = ""
        # the API server's refusal of pods/proxy, when that was the answer
        self.forbidden: str | None = None
        # the API server's own 401 or 503, when that was the answer (`api_path_error`)
        self.path_error: str | None = None
        self.connections = 0

    async def start(self) -> tuple[str, int]:
        """Return the address to dial; it closes `timeout` + a second later (the attempt is
        over)."""
        self.server = await asyncio.start_server(quiet_on_cancel(self._relay), "127.0.0.1", 0)
        asyncio.get_running_loop().call_later(self.timeout + ACCEPT_WINDOW, self._expire)
        return "127.0.0.1", self.server.sockets[0].getsockname()[1]

    def _expire(self) -> None:
        if self.server is not None:
            self.server.close()
        self.done.set()

    @property
    def prefix(self) -> str:
        """Return the proxy's path on the API server, below any path of the server URL itself."""
        return pod_proxy_prefix(self.api.configuration.host, self.namespace, self.pod, self.port)

    def url(self, target: str) -> URL:
        path, _, query = target.partition("?")
        base = str(URL(self.api.configuration.host).with_path("").with_query(None)).rstrip("/")
        url = f"{base}{self.prefix}{path if path.startswith('/') else '/' + path}"
        # the prober's target is already percent-encoded: send it as it is
        return URL(f"{url}?{query}" if query else url, encoded=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self.server is not None
        self.connections += 1
        if self.connections >= MAX_CONNECTIONS:
            self.server.close()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeout + 5)
            if len(head) > MAX_HEAD_BYTES:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    lower = name.strip().lower()
                    # the API server authenticates with Authorization and strips it: ours wins
                    if lower not in _HOP_BY_HOP and lower != "authorization":
                        headers[name.strip()] = value.strip()
            queries: list[tuple[str, str]] = []
            await self.api.update_params_for_auth(headers, queries, ["BearerToken"])
            session: aiohttp.ClientSession = self.api.rest_client.pool_manager
            async with session.request(
                method,
                self.url(target),
                headers=headers,
                allow_redirects=False,
                timeout=aiohttp.ClientTimeout(total=self.timeout + 5),
            ) as resp:
                body = await _read_body(resp.content, MAX_RELAY_BODY)
                forbidden = api_forbidden(resp.status, body)
                if forbidden is not None:
                    self.error = self.forbidden = forbidden
                    if self.on_forbidden is not None:
                        self.on_forbidden(forbidden)
                elif (path_error := api_path_error(resp.status, body)) is not None:
                    self.error = self.path_error = path_error
                out = [f"HTTP/1.1 {resp.status} {resp.reason or ''}"]
                for name, value in resp.headers.items():
                    if name.lower() == "location":
                        value = unproxied_location(value, self.prefix)
                    if name.lower() not in _HOP_BY_HOP:
                        out.append(f"{name}: {value}")
                out += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
                writer.write("\r\n".join(out).encode("latin-1", "replace") + body)
                await writer.drain()
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as e:
            self.error = str(e) or type(e).__name__
            log.info("proxy relay failed: %s", self.error)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self.done.set()


async def _read_body(stream: aiohttp.StreamReader, limit: int) -> bytes:
    """Up to `limit` bytes of the body (`read(n)` alone returns what has arrived so far)."""
    body = bytearray()
    while len(body) < limit:
        chunk = await stream.read(limit - len(body))
        if not chunk:
            break
        body += chunk
    return bytes(body)


__all__ = [
    "OneShotProxy",
    "api_forbidden",
    "api_path_error",
    "pod_proxy_prefix",
    "unproxied_location",
]
