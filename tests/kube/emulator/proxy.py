"""pods/proxy: the apiserver forwards the request to the pod's port and relays the answer.

`/api/v1/namespaces/{ns}/pods/{[scheme:]name[:port]}/proxy/{path}`. Without a port the pod's
first declared container port is used (pod strategy ResourceLocation). The apiserver drops the
client's credentials before proxying (the authentication filter removes `Authorization`), does
not verify a pod's TLS certificate, and answers 503 when it cannot reach the pod.

An answer without a Content-Length (chunked: a node agent's `/v1/stream`) is relayed as it
comes, for as long as it lasts: pods/proxy is a long-running request with no timeout, and the
apiserver's `UpgradeAwareHandler` flushes what it has every 200 ms (`defaultFlushInterval`),
which this relay does as the chunks arrive. `streams` holds the relays in flight, for a test
to cut (`ApiEmulator.cut_proxy_streams`); `on_chunk` is told each relayed chunk's size, for a
benchmark to weigh what the API server carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from . import status
from .resources import Obj

# RFC 9110 hop-by-hop headers, never relayed by a proxy
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
MAX_BODY = 1 << 20


@dataclass(frozen=True, slots=True)
class ProxyTarget:
    scheme: str
    name: str
    port: str


def parse_name(segment: str) -> ProxyTarget:
    """`name`, `name:port` or `scheme:name:port` (net.SplitSchemeNamePort)."""
    parts = segment.split(":")
    if len(parts) == 1:
        return ProxyTarget("", parts[0], "")
    if len(parts) == 2:
        return ProxyTarget("", parts[0], parts[1])
    if len(parts) == 3 and parts[0] in ("http", "https"):
        return ProxyTarget(parts[0], parts[1], parts[2])
    raise ValueError(f"invalid service/pod name {segment!r}")


def default_port(pod: Obj) -> str:
    for container in pod.get("spec", {}).get("containers") or []:
        ports = container.get("ports") or []
        if ports:
            return str(ports[0].get("containerPort", ""))
    return ""


def unreachable(
    pod_ip: str, port: str, *, why: str = "connect: connection refused"
) -> web.Response:
    host = f"[{pod_ip}]" if ":" in pod_ip else pod_ip
    return status.response(
        status.status(503, f"error trying to reach service: dial tcp {host}:{port}: {why}")
    )


def rewrite_location(location: str, request: web.Request, pod_host: str, path: str) -> str:
    """What apimachinery's `proxy.Transport.rewriteURL` does to a pod's Location: a same-host
    one with an absolute path moves under the proxy's path, on the API server's scheme and
    host; another host's, or a relative path, is left as it is."""
    url = URL(location)
    if url.host is not None and url.raw_authority not in (pod_host, request.host):
        return location
    if not url.raw_path.startswith("/"):
        return location
    prefix = request.path[: len(request.path) - len(path)].rstrip("/")
    if url.raw_path.startswith(prefix):
        return location
    joined = posixpath.join(prefix, url.raw_path.lstrip("/"))
    if url.raw_path.endswith("/") and not joined.endswith("/"):
        joined += "/"
    moved = URL.build(scheme=request.scheme, authority=request.host, path=joined, encoded=True)
    return str(moved.with_query(url.raw_query_string)) if url.raw_query_string else str(moved)


async def serve_proxy(
    request: web.Request,
    session: aiohttp.ClientSession,
    target: tuple[str, int],
    scheme: str,
    path: str,
    *,
    shown: tuple[str, str],
    timeout: float = 10.0,
    streams: set[web.StreamResponse] | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> web.StreamResponse:
    """Relay one request; `shown` is the pod IP and port the real apiserver would have dialled."""
    host, port = target
    url = f"{scheme or 'http'}://{host}:{port}/{path}"
    headers = {
        k: v
        for k, v in request.headers.items()
        if k.lower() not in HOP_BY_HOP and k.lower() not in ("authorization", "host")
    }
    body = await request.read() if request.can_read_body else None
    try:
        async with session.request(
            request.method,
            url,
            params=list(request.query.items()),
            headers=headers,
            data=body,
            allow_redirects=False,
            ssl=False,
            # a stream's body has no end in sight: the deadline is on the connect and the head
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout),
        ) as upstream:
            relayed = CIMultiDict(
                (k, v)
                for k, v in upstream.headers.items()
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"
            )
            if "Location" in relayed:
                relayed["Location"] = rewrite_location(
                    relayed["Location"], request, f"{host}:{port}", path
                )
            if upstream.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return await _relay_stream(request, upstream, relayed, streams, on_chunk)
            payload = await asyncio.wait_for(_read_capped(upstream.content), timeout)
            return web.Response(status=upstream.status, body=payload, headers=relayed)
    except (aiohttp.ClientConnectorError, ConnectionRefusedError):
        return unreachable(*shown)
    except TimeoutError:
        return unreachable(*shown, why="i/o timeout")
    except aiohttp.ClientError as err:
        return status.response(status.status(503, f"error trying to reach service: {err}"))


async def _read_capped(content: aiohttp.StreamReader) -> bytes:
    # read(n) returns what has arrived; readexactly-or-EOF gives the whole body up to the cap
    payload = b""
    while len(payload) < MAX_BODY and (chunk := await content.read(MAX_BODY - len(payload))):
        payload += chunk
    return payload


async def _relay_stream(
    request: web.Request,
    upstream: aiohttp.ClientResponse,
    headers: CIMultiDict[str],
    streams: set[web.StreamResponse] | None,
    on_chunk: Callable[[int], None] | None = None,
) -> web.StreamResponse:
    resp = web.StreamResponse(status=upstream.status, headers=headers)
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    if streams is not None:
        streams.add(resp)
    try:
        async for chunk in upstream.content.iter_any():
            if on_chunk is not None:
                on_chunk(len(chunk))
            await resp.write(chunk)
        await resp.write_eof()
    except (ConnectionError, aiohttp.ClientError):
        pass  # either end went away: the relay ends with it
    finally:
        if streams is not None:
            streams.discard(resp)
    return resp


def cut(resp: web.StreamResponse) -> None:
    """End a relayed stream in the middle, without the chunked terminator (the apiserver
    restarting, a load balancer's idle cut)."""
    transport = resp._req.transport if resp._req is not None else None
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.abort()
